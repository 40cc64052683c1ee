// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadatatest"
)

const channel = "audit-channel"

var t0 = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

// runAt is the ID of the audit run that started i minutes after t0.
func runAt(i int) string { return auditID(t0.Add(time.Duration(i) * time.Minute)) }

// gkTest is a receiver with a gatekeeper_export input whose polls the test drives.
type gkTest struct {
	*testReceiver
	tick   chan time.Time
	polled chan struct{}
	host   *statustest.Host
	// ext is the storage extension, shut down with the receiver so that the next one can open its files.
	ext  component.Component
	done bool
}

func gkConfig(t *testing.T) (*Config, string) {
	cfg := createDefaultConfig().(*Config)
	path := t.TempDir()
	g := defaultGatekeeperExport()
	g.Path = path
	cfg.GatekeeperExport = configoptional.Some(g)
	return cfg, path
}

// startGK starts the receiver, whose first poll begins at once; the caller waits for its end (waitPoll) unless
// it holds the pipeline.
func startGK(t *testing.T, cfg *Config, host component.Host, sink *refusingSink) *gkTest {
	t.Helper()
	require.NoError(t, cfg.Validate())
	if sink == nil {
		sink = &refusingSink{}
	}
	tel := componenttest.NewTelemetry()
	rcv, err := newReceiver(cfg, metadatatest.NewSettings(tel), sink)
	require.NoError(t, err)
	var ext map[component.ID]component.Component
	if host != nil {
		ext = host.GetExtensions()
	}
	g := &gkTest{tick: make(chan time.Time), polled: make(chan struct{}), host: statustest.NewHost(ext)}
	rcv.gkTick, rcv.gkPolled = g.tick, g.polled
	require.NoError(t, rcv.Start(context.Background(), g.host))
	g.testReceiver = &testReceiver{t: t, rcv: rcv, sink: sink, telemetry: tel}
	t.Cleanup(g.stop)
	return g
}

func (g *gkTest) stop() {
	if !g.done {
		g.done = true
		require.NoError(g.t, g.rcv.Shutdown(context.Background()))
		if g.ext != nil {
			require.NoError(g.t, g.ext.Shutdown(context.Background()))
		}
	}
}

func (g *gkTest) waitPoll() {
	g.t.Helper()
	select {
	case <-g.polled:
	case <-time.After(10 * time.Second):
		g.t.Fatal("no poll ended")
	}
}

// poll runs one poll to its end.
func (g *gkTest) poll() {
	g.t.Helper()
	g.tick <- time.Now()
	g.waitPoll()
}

func (g *gkTest) metric(name string, attrs map[string]string) int64 {
	m, err := g.telemetry.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		match := true
		for k, v := range attrs {
			if got, _ := dp.Attributes.Value(attribute.Key(k)); got.AsString() != v {
				match = false
			}
		}
		if match {
			n += dp.Value
		}
	}
	return n
}

func (g *gkTest) gaps() int64 {
	return g.metric("otelcol_receiver_decision_logs_export_gaps", map[string]string{"channel": channel})
}

func (g *gkTest) files(kind string) int64 {
	return g.metric("otelcol_receiver_decision_logs_export_files", map[string]string{"channel": channel, "file_kind": kind})
}

// seen is what identifies the decisions that arrived, in order: kind, constraint, resource, state.
func (g *gkTest) seen() []string {
	var out []string
	for _, d := range g.decisions() {
		s := d.Kind + " " + d.Rule + " " + d.Resource.Namespace + "/" + d.Resource.Name
		if st, ok := d.Attrs[policyresult.AttrResultState]; ok {
			s += " " + st.(string)
		}
		out = append(out, s)
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestGatekeeperExportReadsCompleteFilesOfEveryChannel(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 2
	dir := filepath.Join(path, channel)
	r0, r1, r2 := runAt(0), runAt(1), runAt(2)
	run0 := writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"),
		auditViolation(r0, "c1", "shop", "p2", "deny"), auditViolation(r0, "c2", "shop", "p1", "warn"))
	run1 := writeAuditRun(t, dir, r1, auditViolation(r1, "c1", "shop", "p1", "deny"))
	// A run being written, a segment being written, one being deleted: none is complete.
	writing, txt := startAuditRun(t, dir, r2)
	_, err := writing.WriteString(marker(r2, auditStartedMsg) + "\n" + auditViolation(r2, "c1", "shop", "p9", "deny") + "\n")
	require.NoError(t, err)
	open := filepath.Join(dir, gatekeeperexport.AdmissionPrefix+"20261124T080000.000000000Z-aaaaaaaaaaaaaaaa.open")
	deleting := filepath.Join(dir, gatekeeperexport.AdmissionPrefix+"20261124T075900.000000000Z-bbbbbbbbbbbbbbbb.log.deleting")
	for _, p := range []string{open, deleting} {
		require.NoError(t, os.WriteFile(p, []byte(admissionViolation("uid-x", "shop", "never")+"\n"), 0o660))
	}
	seg := writeAdmissionSegment(t, dir, t0, admissionViolation("uid-1", "shop", "a1"), admissionViolation("uid-1", "shop", "a2"))
	other := writeAdmissionSegment(t, filepath.Join(path, "other-channel"), t0, admissionViolation("uid-2", "pay", "b1"))

	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	want := []string{
		"audit c1 shop/p1", "audit c1 shop/p2", "audit c2 shop/p1", "audit c1 shop/p1",
		"admission deployments-must-have-owner shop/a1", "admission deployments-must-have-owner shop/a2",
		"admission deployments-must-have-owner pay/b1",
	}
	assert.Equal(t, want, g.seen())
	got := g.decisions()
	assert.Equal(t, t0, got[0].Timestamp, "an audit violation is at its run's time")
	assert.Equal(t, t0.Add(time.Minute), got[3].Timestamp)
	assert.NotEqual(t, got[0].ID, got[3].ID, "each run's violation is a decision of its own")
	assert.Equal(t, int64(4), g.rejectedCount("gatekeeper_export:"+channel, "not_decision"), "two markers a run")
	assert.Equal(t, int64(2), g.files(gatekeeperexport.FileKindAudit))
	assert.Equal(t, int64(1), g.files(gatekeeperexport.FileKindAdmission))

	assert.True(t, exists(run0) && exists(run1), "audit runs are Gatekeeper's to prune")
	assert.False(t, exists(seg) || exists(other), "admission segments are deleted once accepted")
	assert.True(t, exists(txt) && exists(open) && exists(deleting), "incomplete files are left alone")

	g.poll()
	assert.Equal(t, want, g.seen(), "nothing is read twice")

	finishAuditRun(t, writing, txt)
	g.poll()
	assert.Equal(t, append(want, "audit c1 shop/p9"), g.seen(), "a run is read once it is complete")
	assert.Zero(t, g.gaps())
}

func TestGatekeeperExportWaitsForALockedSegment(t *testing.T) {
	cfg, path := gkConfig(t)
	dir := filepath.Join(path, channel)
	seg1 := writeAdmissionSegment(t, dir, t0, admissionViolation("uid-1", "shop", "a1"))
	seg2 := writeAdmissionSegment(t, dir, t0.Add(time.Second), admissionViolation("uid-2", "shop", "a2"))
	release := holdLock(t, seg1)

	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	g.poll()
	assert.Empty(t, g.seen(), "a locked segment is not read, nor any newer one before it")
	assert.True(t, exists(seg1) && exists(seg2))

	release()
	g.poll()
	assert.Equal(t, []string{"admission deployments-must-have-owner shop/a1", "admission deployments-must-have-owner shop/a2"}, g.seen())
	assert.False(t, exists(seg1) || exists(seg2))
}

func TestGatekeeperExportWaitsForAProcessHoldingTheLock(t *testing.T) {
	flockCmd, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) here; TestGatekeeperExportWaitsForALockedSegment holds the lock in-process")
	}
	cfg, path := gkConfig(t)
	dir := filepath.Join(path, channel)
	seg := writeAdmissionSegment(t, dir, t0, admissionViolation("uid-1", "shop", "a1"))
	// flock(1) takes LOCK_EX|LOCK_NB on the segment and holds it until its stdin closes.
	cmd := exec.Command(flockCmd, "-x", "-n", seg, "sh", "-c", "echo locked; cat >/dev/null")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	assert.Empty(t, g.seen())
	assert.True(t, exists(seg))

	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	g.poll()
	assert.Equal(t, []string{"admission deployments-must-have-owner shop/a1"}, g.seen())
	assert.False(t, exists(seg))
}

func TestGatekeeperExportCountsPrunedRunsAsGaps(t *testing.T) {
	cfg, path := gkConfig(t)
	dir := filepath.Join(path, channel)
	var runs []string
	for i := range 5 {
		id := runAt(i)
		if i < 2 {
			runs = append(runs, writeAuditRun(t, dir, id, auditViolation(id, "c1", "shop", "p"+id[14:16], "deny")))
		}
	}
	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	require.Len(t, g.seen(), 2)

	// While the collector was not looking, runs 2 to 4 were written and, with maxAuditResults 2, runs 0 to 2
	// pruned: run 2 was never read.
	for i := 2; i < 5; i++ {
		id := runAt(i)
		runs = append(runs, writeAuditRun(t, dir, id, auditViolation(id, "c1", "shop", "p"+id[14:16], "deny")))
	}
	for _, r := range runs[:3] {
		require.NoError(t, os.Remove(r))
	}
	g.poll()
	assert.Equal(t, []string{"audit c1 shop/p00", "audit c1 shop/p01", "audit c1 shop/p03", "audit c1 shop/p04"}, g.seen())
	assert.Equal(t, int64(1), g.gaps(), "run 2")

	// A segment listed behind a locked one and pruned before its turn.
	seg1 := writeAdmissionSegment(t, dir, t0, admissionViolation("uid-1", "shop", "a1"))
	seg2 := writeAdmissionSegment(t, dir, t0.Add(time.Second), admissionViolation("uid-2", "shop", "a2"))
	release := holdLock(t, seg1)
	g.poll()
	require.NoError(t, os.Remove(seg2))
	release()
	g.poll()
	assert.Equal(t, "admission deployments-must-have-owner shop/a1", g.seen()[4])
	assert.Len(t, g.seen(), 5)
	assert.Equal(t, int64(2), g.gaps())
}

func TestGatekeeperExportReadsAFileDeletedWhileBeingRead(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 1
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	run := writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"),
		auditViolation(r0, "c1", "shop", "p2", "deny"), auditViolation(r0, "c1", "shop", "p3", "deny"))
	sink := &refusingSink{}
	sink.gated()
	g := startGK(t, cfg, nil, sink)
	<-sink.entered
	// Gatekeeper prunes the run while its first record is being handed over: the open file is read to its end.
	require.NoError(t, os.Remove(run))
	sink.gate <- struct{}{}
	for range 2 {
		<-sink.entered
		sink.gate <- struct{}{}
	}
	g.waitPoll()
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2", "audit c1 shop/p3"}, g.seen())
	assert.Zero(t, g.gaps())
	g.poll()
	assert.Len(t, g.seen(), 3)
}

// interruptAfterFirstBatch starts a receiver with storage whose pipeline accepts the first batch and refuses the
// rest, and stops it while it retries the second, as a collector killed while handing a batch over; the storage
// extension is shut down too.
func interruptAfterFirstBatch(t *testing.T, cfg *Config, storeDir string) *gkTest {
	t.Helper()
	host := filestoragetest.NewHost(t, storeDir)
	sink := &refusingSink{}
	sink.gated()
	g := startGK(t, cfg, host, sink)
	g.ext = host.Ext
	<-sink.entered
	sink.gate <- struct{}{}
	<-sink.entered
	sink.refusing.Store(true)
	close(sink.gate)
	g.stop()
	return g
}

func restart(t *testing.T, cfg *Config, storeDir string) *gkTest {
	t.Helper()
	host := filestoragetest.NewHost(t, storeDir)
	g := startGK(t, cfg, host, nil)
	g.ext = host.Ext
	g.waitPoll()
	return g
}

func TestGatekeeperExportResumesAfterARestartWithStorage(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 2
	cfg.Storage = &filestoragetest.ID
	storeDir := t.TempDir()
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	var vs []string
	for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
		vs = append(vs, auditViolation(r0, "c1", "shop", p, "deny"))
	}
	writeAuditRun(t, dir, r0, vs...)
	seg := writeAdmissionSegment(t, dir, t0, admissionViolation("uid-1", "shop", "a1"),
		admissionViolation("uid-1", "shop", "a2"), admissionViolation("uid-1", "shop", "a3"))

	first := interruptAfterFirstBatch(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2"}, first.seen())

	second := restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p3", "audit c1 shop/p4", "audit c1 shop/p5",
		"admission deployments-must-have-owner shop/a1", "admission deployments-must-have-owner shop/a2",
		"admission deployments-must-have-owner shop/a3"}, second.seen(), "no loss, and nothing accepted sent again")
	assert.False(t, exists(seg))
	second.poll()
	assert.Len(t, second.seen(), 6)
	second.stop()

	third := restart(t, cfg, storeDir)
	assert.Empty(t, third.seen(), "a run accepted before the restart is not sent again")
	assert.Zero(t, third.gaps())
}

// Gatekeeper names a run after the second it started; a run started in the same second as the one before (its
// ticker held the start back while that run overran, or while the process was stopped) is renamed over it. The
// real Gatekeeper did so in TestGatekeeperExportThroughTheCollector.
func TestGatekeeperExportReadsARunRenamedOverTheRunBefore(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.Storage = &filestoragetest.ID
	storeDir := t.TempDir()
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"))
	first := restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p1"}, first.seen())

	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p2", "deny"))
	first.poll()
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2"}, first.seen(), "the second run of that second")
	first.poll()
	assert.Len(t, first.seen(), 2)
	assert.Equal(t, int64(2), first.files(gatekeeperexport.FileKindAudit))
	first.stop()

	second := restart(t, cfg, storeDir)
	assert.Empty(t, second.seen(), "the run read is remembered by its file")
	assert.Zero(t, second.gaps())
}

func TestGatekeeperExportCountsARunPrunedWhileTheCollectorWasDown(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 1
	cfg.Storage = &filestoragetest.ID
	storeDir := t.TempDir()
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	run := writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"), auditViolation(r0, "c1", "shop", "p2", "deny"))

	first := interruptAfterFirstBatch(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p1"}, first.seen())
	require.NoError(t, os.Remove(run))
	r1 := runAt(1)
	writeAuditRun(t, dir, r1, auditViolation(r1, "c1", "shop", "p1", "deny"))

	second := restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p1"}, second.seen(), "the next run only")
	assert.Equal(t, int64(1), second.gaps(), "the rest of run 0")
}

func TestGatekeeperExportAuditChanges(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.GatekeeperExport.Get().AuditChanges = true
	cfg.Storage = &filestoragetest.ID
	storeDir := t.TempDir()
	dir := filepath.Join(path, channel)
	r0, r1, r2, r3 := runAt(0), runAt(1), runAt(2), runAt(3)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "a", "deny"), auditViolation(r0, "c1", "shop", "b", "deny"))

	g := restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/a new", "audit c1 shop/b new"}, g.seen())

	writeAuditRun(t, dir, r1, auditViolation(r1, "c1", "shop", "a", "deny"), auditViolation(r1, "c1", "shop", "b", "deny"),
		auditViolation(r1, "c1", "shop", "c", "deny"))
	g.poll()
	assert.Equal(t, []string{"audit c1 shop/a new", "audit c1 shop/b new", "audit c1 shop/c new"}, g.seen(),
		"what stays is not sent again")
	g.stop()

	// The previous run's violations survive the restart.
	writeAuditRun(t, dir, r2, auditViolation(r2, "c1", "shop", "a", "warn"), auditViolation(r2, "c1", "shop", "c", "deny"))
	g = restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/a changed", "audit c1 shop/b resolved"}, g.seen())
	got := g.decisions()
	assert.Equal(t, policyresult.ActionWarn, got[0].Action)
	assert.Equal(t, t0.Add(2*time.Minute), got[1].Timestamp, "resolved as of the run that no longer found it")
	assert.Equal(t, "c1", got[1].Rule)

	writeAuditRun(t, dir, r3, auditViolation(r3, "c1", "shop", "a", "warn"), auditViolation(r3, "c1", "shop", "c", "deny"))
	g.poll()
	assert.Len(t, g.seen(), 2, "an unchanged run sends nothing")
}

func TestGatekeeperExportSkipsMalformedLinesAndConsumesTheFile(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.GatekeeperExport.Get().MaxLineBytes = 1024
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	writeAuditRun(t, dir, r0,
		auditViolation(r0, "c1", "shop", "p1", "deny"),
		`{"id":`,
		`{"id":"x","eventType":"violation_audited","kind":"K8sRequiredLabels","name":"`+strings.Repeat("x", 2000)+`"}`,
		`{"id":"x","eventType":"violation_audited","kind":5}`,
		auditViolation(r0, "c1", "shop", "p2", "deny"))
	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2"}, g.seen())
	listener := "gatekeeper_export:" + channel
	assert.Equal(t, int64(2), g.rejectedCount(listener, "event"))
	assert.Equal(t, int64(1), g.rejectedCount(listener, "line_too_long"))
	assert.Equal(t, int64(1), g.files(gatekeeperexport.FileKindAudit), "the file is consumed all the same")
	g.poll()
	assert.Len(t, g.seen(), 2)
}

func TestGatekeeperExportReadsTheNextBatchWhileOneIsHandedOver(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 1
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"), `{"id":`,
		auditViolation(r0, "c1", "shop", "p2", "deny"), auditViolation(r0, "c1", "shop", "p3", "deny"))
	sink := &refusingSink{}
	sink.gated()
	g := startGK(t, cfg, nil, sink)
	var release sync.Once
	// Before the receiver stops, should the test fail while the pipeline holds a record.
	t.Cleanup(func() { release.Do(func() { close(sink.gate) }) })
	<-sink.entered
	// The pipeline holds the first record; the reader has gone on to the malformed line after it.
	listener := "gatekeeper_export:" + channel
	require.Eventually(t, func() bool { return g.rejectedCount(listener, "event") == 1 }, 10*time.Second, time.Millisecond)
	release.Do(func() { close(sink.gate) })
	g.waitPoll()
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2", "audit c1 shop/p3"}, g.seen(), "in order")
	assert.Equal(t, int64(1), g.files(gatekeeperexport.FileKindAudit))
}

func TestGatekeeperExportRetriesWhileThePipelineRefuses(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 2
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	var vs, want []string
	for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
		vs = append(vs, auditViolation(r0, "c1", "shop", p, "deny"))
		want = append(want, "audit c1 shop/"+p)
	}
	writeAuditRun(t, dir, r0, vs...)
	sink := &refusingSink{}
	sink.refusing.Store(true)
	g := startGK(t, cfg, nil, sink)
	require.Eventually(t, func() bool { return sink.refused.Load() >= 2 }, 10*time.Second, time.Millisecond)
	sink.refusing.Store(false)
	g.waitPoll()
	assert.Equal(t, want, g.seen(), "each record once, in order")
	assert.Equal(t, int64(1), g.files(gatekeeperexport.FileKindAudit))
}

func TestGatekeeperExportFaultsAreStatuses(t *testing.T) {
	cfg, path := gkConfig(t)
	missing := filepath.Join(path, "export")
	cfg.GatekeeperExport.Get().Path = missing
	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	ev := g.host.Next(t)
	assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
	assert.ErrorContains(t, ev.Err(), "no such file or directory")

	dir := filepath.Join(missing, channel)
	r0 := runAt(0)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"))
	g.poll()
	assert.Equal(t, componentstatus.StatusOK, g.host.Next(t).Status())
	assert.Len(t, g.seen(), 1)

	if os.Geteuid() == 0 {
		// Root reads any directory: an unreadable one is a file where the directory should be.
		require.NoError(t, os.RemoveAll(missing))
		require.NoError(t, os.WriteFile(missing, nil, 0o600))
		g.poll()
		ev = g.host.Next(t)
		assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
		assert.ErrorContains(t, ev.Err(), "not a directory")
		return
	}
	require.NoError(t, os.Chmod(dir, 0))
	g.poll()
	ev = g.host.Next(t)
	assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
	assert.ErrorContains(t, ev.Err(), "permission denied")
	require.NoError(t, os.Chmod(dir, 0o770))
	r1 := runAt(1)
	writeAuditRun(t, dir, r1, auditViolation(r1, "c1", "shop", "p1", "deny"))
	g.poll()
	assert.Equal(t, componentstatus.StatusOK, g.host.Next(t).Status())
	assert.Len(t, g.seen(), 2)
}
