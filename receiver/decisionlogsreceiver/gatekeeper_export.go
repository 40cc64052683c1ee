// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/storageclient"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// Reasons of otelcol_receiver_decision_logs_rejected for what the export directory holds besides Gatekeeper's
// files, and for state that cannot be used.
const (
	reasonUnknownFile    = "unknown_file"
	reasonNotRegularFile = "not_regular_file"
	reasonIncompleteRun  = "incomplete_run"
	reasonDamagedState   = "damaged_state"
)

func exportListener(channel string) string { return "gatekeeper_export:" + channel }

// Lines of an audit run that are no violation: the first and the last.
const (
	auditStartedMsg   = "audit is started"
	auditCompletedMsg = "audit is completed"
)

// gkExport polls the channel directories of a Gatekeeper disk export and hands their violations to the
// pipeline, one file at a time under the file's lock, oldest first.
type gkExport struct {
	r       *decisionsReceiver
	cfg     *GatekeeperExportConfig
	obs     *receiverhelper.ObsReport
	host    component.Host
	store   *gkStore
	limiter logLimiter

	channels map[string]*gkChannel
	// polled, when set (tests), hears of the end of each poll.
	polled chan<- struct{}
	// fault is the last fault reported as the component's status, "" when none.
	fault string
}

func (r *decisionsReceiver) startGatekeeperExport(ctx context.Context, host component.Host, cfg *GatekeeperExportConfig) error {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: "file", ReceiverCreateSettings: r.set,
	})
	if err != nil {
		return err
	}
	g := &gkExport{r: r, cfg: cfg, obs: obs, host: host, channels: map[string]*gkChannel{}, polled: r.gkPolled}
	if r.cfg.Storage != nil {
		client, err := storageclient.Open(ctx, host, *r.cfg.Storage, component.KindReceiver, r.set.ID)
		if err != nil {
			return fmt.Errorf("gatekeeper_export: %w", err)
		}
		g.store = &gkStore{client: client}
	}
	r.gk = g
	tick := r.gkTick
	var ticker *time.Ticker
	if tick == nil {
		ticker = time.NewTicker(cfg.PollInterval)
		tick = ticker.C
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if ticker != nil {
			defer ticker.Stop()
		}
		g.run(tick)
	}()
	return nil
}

// run polls at once and then at every tick until the receiver stops.
func (g *gkExport) run(tick <-chan time.Time) {
	for {
		g.poll()
		if g.polled != nil {
			select {
			case g.polled <- struct{}{}:
			case <-g.r.stopping.Done():
				return
			}
		}
		select {
		case <-g.r.stopping.Done():
			return
		case <-tick:
		}
	}
}

func (g *gkExport) close(ctx context.Context) error { return g.store.close(ctx) }

func (g *gkExport) stopped() bool { return g.r.stopping.Err() != nil }

// poll reads every channel directory. A fault (an unreadable directory or file, a failing storage) becomes the
// component's status until a poll goes through without one; the input keeps polling.
func (g *gkExport) poll() {
	entries, err := os.ReadDir(g.cfg.Path)
	if err != nil {
		g.report(fmt.Errorf("gatekeeper_export: %w", err))
		return
	}
	var errs []error
	for _, e := range entries {
		if g.stopped() {
			return
		}
		if !e.IsDir() {
			continue
		}
		if err := g.readChannel(e.Name()); err != nil {
			errs = append(errs, fmt.Errorf("gatekeeper_export: channel %s: %w", e.Name(), err))
		}
	}
	if !g.stopped() {
		g.report(errors.Join(errs...))
	}
}

// report sets the component's status when the fault changes, and logs it then, since polls repeat it.
func (g *gkExport) report(err error) {
	if err == nil {
		if g.fault != "" {
			g.fault = ""
			componentstatus.ReportStatus(g.host, componentstatus.NewEvent(componentstatus.StatusOK))
		}
		return
	}
	if msg := err.Error(); msg != g.fault {
		g.fault = msg
		g.r.set.Logger.Warn("Reading Gatekeeper's export failed; retrying at every poll", zap.Error(err))
		componentstatus.ReportStatus(g.host, componentstatus.NewRecoverableErrorEvent(err))
	}
}

func (g *gkExport) channel(name string) (*gkChannel, error) {
	if c, ok := g.channels[name]; ok {
		return c, nil
	}
	c, damaged, err := g.store.load(g.r.stopping, name)
	if err != nil {
		return nil, err
	}
	for _, d := range damaged {
		g.r.telemetry.ReceiverDecisionLogsRejected.Add(context.Background(), 1, metric.WithAttributes(
			attribute.String("listener", exportListener(name)), attribute.String("reason", reasonDamagedState)))
		g.r.set.Logger.Error("Stored state of Gatekeeper's export is damaged: kept aside, and the channel goes on "+
			"without it (runs on disk are sent again, and with audit_changes the next run whole)",
			zap.String("channel", name), zap.String("storage_key", d.key), zap.String("kept_as", d.key+damagedSuffix),
			zap.Int("bytes", len(d.raw)), zap.Error(d.err))
	}
	g.channels[name] = c
	return c, nil
}

// gkFile is a complete file of a channel directory.
type gkFile struct {
	name    string
	inode   uint64
	modTime time.Time
	// run is when an audit run started.
	run time.Time
}

// oddFile is a .log name of a channel directory that is not read: not Gatekeeper's, or not a regular file.
type oddFile struct {
	reason, why string
}

func (g *gkExport) readChannel(channel string) error {
	c, err := g.channel(channel)
	if err != nil {
		return err
	}
	dir := filepath.Join(g.cfg.Path, channel)
	now := time.Now()
	audit, admission, odd, err := listExportFiles(dir, now)
	if err != nil {
		return err
	}
	g.countOdd(channel, c, odd)
	listedBefore := c.ListedAt
	c.ListedAt = now.Unix()
	c.unseen = map[string]int{gatekeeperexport.FileKindAudit: gatekeeperexport.MaxAuditRunsOnDisk, gatekeeperexport.FileKindAdmission: gatekeeperexport.MaxAdmissionSegmentsOnDisk}
	g.noticeDeleted(channel, c, audit, admission)
	var errs []error
	for _, k := range []struct {
		kind  string
		files []gkFile
	}{{gatekeeperexport.FileKindAudit, audit}, {gatekeeperexport.FileKindAdmission, admission}} {
		for _, f := range k.files {
			if g.stopped() {
				return nil
			}
			if k.kind == gatekeeperexport.FileKindAudit && c.auditRead(f) {
				continue
			}
			if k.kind == gatekeeperexport.FileKindAudit {
				g.checkSequence(channel, c, audit, f, listedBefore, now)
			}
			busy, err := g.readFile(channel, dir, c, k.kind, f.name)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
			}
			if busy || err != nil {
				// Files of a kind are read in order: the rest waits for the next poll.
				break
			}
		}
	}
	return errors.Join(errs...)
}

// countOdd counts and logs each name that is not read when it appears, not at every poll while it stays.
func (g *gkExport) countOdd(channel string, c *gkChannel, odd map[string]oddFile) {
	for name, o := range odd {
		if _, ok := c.odd[name]; !ok {
			g.r.rejected(&g.limiter, exportListener(channel), o.reason, 1, zap.String("file", name), zap.String("why", o.why))
		}
	}
	c.odd = make(map[string]struct{}, len(odd))
	for name := range odd {
		c.odd[name] = struct{}{}
	}
}

// listExportFiles lists the complete files of a channel directory: audit runs by their start, admission
// segments oldest first, as Gatekeeper prunes them; and the other .log names, which are not read.
func listExportFiles(dir string, now time.Time) (audit, admission []gkFile, odd map[string]oddFile, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	odd = map[string]oddFile{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, gatekeeperexport.ReadyExt) {
			continue
		}
		kind, run := gatekeeperexport.ParseName(name)
		switch {
		case kind == "":
			odd[name] = oddFile{reasonUnknownFile, "Gatekeeper does not write this name"}
			continue
		case run.After(now.Add(gatekeeperexport.AuditIDFutureTolerance)):
			odd[name] = oddFile{reasonUnknownFile, "its audit ID is in the future"}
			continue
		case !e.Type().IsRegular():
			odd[name] = oddFile{reasonNotRegularFile, "it is not a regular file"}
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		f := gkFile{name: name, inode: gatekeeperexport.Inode(info), modTime: info.ModTime(), run: run}
		if kind == gatekeeperexport.FileKindAdmission {
			admission = append(admission, f)
		} else {
			audit = append(audit, f)
		}
	}
	sort.Slice(audit, func(i, j int) bool { return audit[i].run.Before(audit[j].run) })
	sort.Slice(admission, func(i, j int) bool {
		if a, b := admission[i].modTime, admission[j].modTime; !a.Equal(b) {
			return a.Before(b)
		}
		return admission[i].name < admission[j].name
	})
	return audit, admission, odd, nil
}

// noticeDeleted counts the files that were listed, or being read, at the last poll (or before a restart) and
// are gone though not read to their end: Gatekeeper pruned them first.
func (g *gkExport) noticeDeleted(channel string, c *gkChannel, audit, admission []gkFile) {
	present := make(map[string]struct{}, len(audit)+len(admission))
	for _, files := range [][]gkFile{audit, admission} {
		for _, f := range files {
			present[f.name] = struct{}{}
		}
	}
	for _, kind := range []string{gatekeeperexport.FileKindAudit, gatekeeperexport.FileKindAdmission} {
		p := c.progress(kind)
		if *p == nil {
			continue
		}
		if _, ok := present[(*p).Name]; ok {
			continue
		}
		name := (*p).Name
		// An admission segment read to its end was deleted by this reader, which then stopped before it
		// recorded that.
		if kind == gatekeeperexport.FileKindAudit || (*p).Offset < (*p).Size {
			g.deletedUnread(channel, c, kind, name, "it was deleted while being read")
		}
		*p = nil
		delete(c.listed, name)
		if kind == gatekeeperexport.FileKindAudit && gatekeeperexport.AuditRunAfter(name, c.AuditDone) {
			// The run cannot be completed; its violations stay those of the run before (audit_changes).
			c.AuditDone, c.AuditDoneInode = name, 0
		}
		g.save(channel, c, false)
	}
	for name, kind := range c.listed {
		if _, ok := present[name]; !ok && (kind != gatekeeperexport.FileKindAudit || gatekeeperexport.AuditRunAfter(name, c.AuditDone)) {
			g.deletedUnread(channel, c, kind, name, "it was deleted before it was read")
		}
	}
	c.listed = make(map[string]string, len(present))
	for _, f := range audit {
		if gatekeeperexport.AuditRunAfter(f.name, c.AuditDone) {
			c.listed[f.name] = gatekeeperexport.FileKindAudit
		}
	}
	for _, f := range admission {
		c.listed[f.name] = gatekeeperexport.FileKindAdmission
	}
	// Consecutive runs on disk are consecutive runs: Gatekeeper prunes the oldest only.
	var interval time.Duration
	for i := 1; i < len(audit); i++ {
		if d := audit[i].run.Sub(audit[i-1].run); d > 0 && (interval == 0 || d < interval) {
			interval = d
		}
	}
	if interval > 0 {
		c.Interval = interval
	}
}

// checkSequence counts the runs missing between the last run read and next, the first run not read yet, when
// the last run's file is gone (had it not been pruned, no newer one would have been) and next started more than
// half an interval later than expected. Without a known interval (fewer than two runs seen at once) a gap
// cannot be told.
//
// The count is bounded by what can have been written unseen: runs started after the listing before this one
// (listedBefore, Unix seconds; 0 when unknown), at most one a second, and the one being written then. Runs
// written before it were on disk at that listing: Gatekeeper prunes the oldest first, and the last run read was
// still there, or its absence was counted then.
func (g *gkExport) checkSequence(channel string, c *gkChannel, audit []gkFile, next gkFile, listedBefore int64, now time.Time) {
	if c.AuditDone == "" || c.gapChecked == next.name || (c.Audit != nil && c.Audit.Name == next.name) || c.Interval <= 0 {
		return
	}
	c.gapChecked = next.name
	for _, f := range audit {
		if f.name == c.AuditDone {
			return
		}
	}
	last, _ := gatekeeperexport.AuditRunTime(c.AuditDone)
	d := next.run.Sub(last)
	if d <= c.Interval*3/2 {
		return
	}
	missing := int(min((d+c.Interval/2)/c.Interval, d/gatekeeperexport.MinAuditInterval)) - 1
	if listedBefore > 0 {
		missing = min(missing, int(now.Sub(time.Unix(listedBefore, 0))/gatekeeperexport.MinAuditInterval)+2)
	}
	g.gap(channel, gatekeeperexport.FileKindAudit, next.name, max(missing, 1), "runs between "+gatekeeperexport.AuditRunID(c.AuditDone)+" and this one were deleted before they were read")
}

// deletedUnread counts a file deleted before it was read, unless more were counted since the last listing than
// Gatekeeper keeps of its kind: names that come and go faster are not Gatekeeper's.
func (g *gkExport) deletedUnread(channel string, c *gkChannel, kind, name, why string) {
	if c.unseen[kind] <= 0 {
		return
	}
	c.unseen[kind]--
	g.gap(channel, kind, name, 1, why)
}

// gap counts and logs files Gatekeeper deleted before they were read to their end.
func (g *gkExport) gap(channel, kind, name string, n int, why string) {
	g.r.telemetry.ReceiverDecisionLogsExportGaps.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("channel", channel)))
	fields := []zap.Field{zap.String("channel", channel), zap.String("file", name), zap.Int("files", n), zap.String("why", why)}
	if kind == gatekeeperexport.FileKindAudit {
		fields = append(fields, zap.String("audit_id", gatekeeperexport.AuditRunID(name)))
	}
	g.r.set.Logger.Warn("Gatekeeper deleted export files before they were read: their violations are lost; "+
		"raise the Connection's maxAuditResults or lower poll_interval", fields...)
}

// save records the channel's progress; a storage that fails is a fault, and what it did not record is read
// again after a restart. What the pipeline accepted is recorded even while the receiver stops.
func (g *gkExport) save(channel string, c *gkChannel, runEnded bool) {
	if err := g.store.saveProgress(context.Background(), channel, c, runEnded); err != nil {
		g.report(fmt.Errorf("gatekeeper_export: channel %s: %w", channel, err))
	}
}
