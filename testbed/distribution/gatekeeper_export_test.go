// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package distribution_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/gatekeepertest"
)

// The decision_logs receiver's gatekeeper_export input against a real Gatekeeper audit, through the collector
// binary: a durable_file exporter without a queue writes each batch before the pipeline accepts it, so what the
// file holds is what the receiver had accepted, and the receiver keeps its position in file_storage. One cluster
// and one Gatekeeper (an audit a second, the newest three runs kept) serve every scenario; each scenario reads
// the whole export directory with a collector and storage of its own and derives the records it expects from
// the runs Gatekeeper wrote, which a RunLog keeps after Gatekeeper pruned them. Where a scenario needs a fixed
// set of runs on disk, it pauses Gatekeeper (SIGSTOP).

const (
	gkCluster         = "gk-e2e"
	gkMaxAuditResults = 3
	gkNamespace       = "shop"
	gkConstraint      = "pods-need-team"
	gkLabel           = "team"
)

var gkExportListener = fmt.Sprintf("listener=%q", "gatekeeper_export:"+gatekeepertest.Channel)

func TestGatekeeperExportThroughTheCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and Gatekeeper")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(stop)
	g := gatekeepertest.Start(t, cluster, gatekeepertest.Options{AuditInterval: time.Second, MaxAuditResults: gkMaxAuditResults})
	log := g.Record(t)
	g.CreateNamespace(t, gkNamespace)
	g.RequireLabel(t, gkConstraint, gkLabel, gkNamespace)
	for _, pod := range []string{"web-0", "web-1", "web-2", "web-3"} {
		g.CreatePod(t, gkNamespace, pod, nil)
	}
	g.CreatePod(t, gkNamespace, "api-0", map[string]string{gkLabel: "payments"})
	// Until runs from before the Pods are pruned, runs on disk differ in their violations.
	collectortest.Eventually(t, 60*time.Second, func() error {
		runs, err := g.Runs()
		if err != nil {
			return err
		}
		if len(runs) < gkMaxAuditResults || len(runs[0].Violations) != 4 {
			return fmt.Errorf("%d runs on disk; want %d runs, each with a violation per Pod without the label", len(runs), gkMaxAuditResults)
		}
		return nil
	})

	e := &gkEnv{g: g, log: log}
	t.Run("Violations", e.testViolations)
	t.Run("KilledWhileReading", e.testKilledWhileReading)
	t.Run("PrunedWhileDown", e.testPrunedWhileDown)
	t.Run("AuditChanges", e.testAuditChanges)
}

type gkEnv struct {
	g   *gatekeepertest.Gatekeeper
	log *gatekeepertest.RunLog
}

// testViolations: every run on disk becomes one record per violation, with the markers counted, not emitted.
func (e *gkEnv) testViolations(t *testing.T) {
	e.g.Pause(t)
	defer e.g.Resume(t)
	runs := e.onDisk(t)
	dir := t.TempDir()
	c := startGKCollector(t, dir, gkCollectorOptions{export: e.g.ExportDir, batch: 2})
	c.waitRunsRead(t, len(runs))
	assert.Equal(t, float64(2*len(runs)), c.metric(t, "otelcol_receiver_decision_logs_rejected", gkExportListener+`,reason="not_decision"`),
		"the start and completed markers of each run")
	assert.Zero(t, c.gaps(t))
	c.Stop()

	want := runRecords(runs...)
	assert.Len(t, want, 4*len(runs))
	assert.ElementsMatch(t, want, readGKRecords(t, c.out))
}

// testKilledWhileReading: a collector SIGKILLed while it hands the runs over in batches of two, restarted with
// its storage, delivers every violation of every run, and sends again at most the batch it was handing over.
//
// The first collector writes into a FIFO whose buffer holds one page, less than two batches: once the test
// has read the first batch, the exporter blocks in a write, and with it the receiver, amid the runs.
func (e *gkEnv) testKilledWhileReading(t *testing.T) {
	const batch = 2
	e.g.Pause(t)
	runs := e.onDisk(t)
	require.GreaterOrEqual(t, len(runs), 2, "several runs on disk")
	want := runRecords(runs...)
	require.Greater(t, len(want), 3*batch, "reading spans several batches")

	dir := t.TempDir()
	fifo := newPipeOut(t, filepath.Join(dir, "pipe.jsonl"))
	first := startGKCollector(t, dir, gkCollectorOptions{export: e.g.ExportDir, batch: batch, out: fifo.path})
	fifo.waitLine(t)
	require.NoError(t, syscall.Kill(first.Pid(), syscall.SIGKILL))
	<-first.Exited()
	beforeKill := filepath.Join(dir, "before-kill.jsonl")
	fifo.drain(t, beforeKill)
	delivered := readGKRecords(t, beforeKill)
	require.NotEmpty(t, delivered)
	require.Less(t, len(delivered), len(want), "killed while reading")

	second := startGKCollector(t, dir, gkCollectorOptions{export: e.g.ExportDir, batch: batch})
	e.g.Resume(t)
	// Runs are read in order: once the run after them is delivered, so is everything before it.
	next := e.g.WaitRun(t, runs[len(runs)-1].Start())
	waitGKRecords(t, second.out, runRecords(next))
	assert.Zero(t, second.gaps(t))
	second.Stop()

	got := append(delivered, readGKRecords(t, second.out)...)
	// A run renamed over one of the same ID (gatekeepertest.Run.Inode) reports its violations under the same
	// decision IDs: each is one record for every run that reported it.
	expected, reported := map[string]gkRecord{}, map[string]int{}
	for _, r := range runRecords(e.log.Runs()...) {
		expected[r.ID] = r
		reported[r.ID]++
	}
	seen := map[string]int{}
	for _, r := range got {
		require.Equal(t, expected[r.ID], r, "a record of a violation Gatekeeper reported")
		seen[r.ID]++
	}
	for _, r := range append(want, runRecords(next)...) {
		assert.Contains(t, seen, r.ID, "delivered: %s/%s of run %s", r.Resource.Namespace, r.Resource.Name, r.Timestamp)
	}
	duplicates := 0
	for id, n := range seen {
		duplicates += max(0, n-reported[id])
	}
	t.Logf("%d records before the kill, %d after; %d sent twice", len(delivered), len(got)-len(delivered), duplicates)
	assert.LessOrEqual(t, duplicates, batch, "at most the batch being handed over is sent again")
}

// testPrunedWhileDown: runs Gatekeeper pruned while the collector was stopped are counted as gaps; the runs
// still on disk are delivered whole.
func (e *gkEnv) testPrunedWhileDown(t *testing.T) {
	dir := t.TempDir()
	storage := filepath.Join(dir, "storage")
	e.g.Pause(t)
	before := e.onDisk(t)
	last := before[len(before)-1]
	c := startGKCollector(t, dir, gkCollectorOptions{export: e.g.ExportDir, storage: storage})
	c.waitRunsRead(t, len(before))
	c.Stop()
	firstOut := c.out
	e.g.Resume(t)

	// Gatekeeper writes on, and prunes runs the stopped collector never saw.
	collectortest.Eventually(t, 60*time.Second, func() error {
		if pruned := e.prunedAfter(t, last); len(pruned) < 2 {
			return fmt.Errorf("%d runs after %s pruned", len(pruned), last.ID)
		}
		return nil
	})
	e.g.Pause(t)
	defer e.g.Resume(t)
	after := e.onDisk(t)
	pruned := e.prunedAfter(t, last)
	// Gatekeeper names a run after the second it started, once an audit interval (1s); it skips a start when
	// a run overran it, or after a pause. The collector tells pruned runs by the seconds missing from the
	// sequence of run IDs, so a skipped start counts as one: the test saw every run written.
	missing := int(after[0].Start().Sub(last.Start())/time.Second) - 1
	skipped := missing - len(pruned)
	t.Logf("pruned %v; starts skipped between %s and %s: %d", pruned, last.ID, after[0].ID, skipped)

	c = startGKCollector(t, dir, gkCollectorOptions{export: e.g.ExportDir, storage: storage})
	c.waitRunsRead(t, len(after))
	assert.Equal(t, float64(len(pruned)+skipped), c.gaps(t), "runs %v were pruned before they were read", pruned)
	c.Stop()
	assert.ElementsMatch(t, runRecords(append(before, after...)...),
		append(readGKRecords(t, firstOut), readGKRecords(t, c.out)...), "every violation of the runs on disk, once")
}

// prunedAfter are the runs recorded after last that are no longer on disk.
func (e *gkEnv) prunedAfter(t *testing.T, last gatekeepertest.Run) []string {
	t.Helper()
	onDisk := map[string]bool{}
	for _, r := range e.onDisk(t) {
		onDisk[r.ID] = true
	}
	var pruned []string
	for _, r := range e.log.Runs() {
		if r.ID > last.ID && !onDisk[r.ID] {
			pruned = append(pruned, r.ID)
		}
	}
	return pruned
}

// testAuditChanges: with audit_changes, unchanged violations are sent once however many runs report them; a
// Pod fixed between runs is one resolved record, a new violating Pod one new record.
func (e *gkEnv) testAuditChanges(t *testing.T) {
	e.g.Pause(t)
	runs := e.onDisk(t)
	first := runs[0]
	dir := t.TempDir()
	c := startGKCollector(t, dir, gkCollectorOptions{export: e.g.ExportDir, batch: 2, auditChanges: true})
	c.waitRunsRead(t, len(runs))
	e.g.Resume(t)
	// Two more runs with the same violations.
	e.g.WaitRun(t, e.g.WaitRun(t, runs[len(runs)-1].Start()).Start())
	runs = e.since(t, first)
	c.waitRunsRead(t, len(runs))
	unchanged := readGKRecords(t, c.out)
	assert.ElementsMatch(t, changeRecords(runs), unchanged)
	require.Len(t, unchanged, 4, "each violation once, as new")

	e.g.LabelPod(t, gkNamespace, "web-0", map[string]string{gkLabel: "storefront"})
	e.g.CreatePod(t, gkNamespace, "late-0", nil)
	changed := time.Now()
	var fixed gatekeepertest.Run
	collectortest.Eventually(t, 60*time.Second, func() error {
		fixed = e.g.WaitRun(t, changed)
		if names := fixed.ResourceNames(); len(names) != 4 || names[0] != gkNamespace+"/late-0" {
			changed = fixed.Start()
			return fmt.Errorf("run %s reports %v", fixed.ID, names)
		}
		return nil
	})
	e.g.Pause(t)
	defer e.g.Resume(t)
	runs = e.since(t, first)
	c.waitRunsRead(t, len(runs))
	assert.Zero(t, c.gaps(t))
	c.Stop()

	got := readGKRecords(t, c.out)
	assert.ElementsMatch(t, changeRecords(runs), got)
	var changes []string
	for _, r := range got[len(unchanged):] {
		changes = append(changes, string(r.State)+" "+r.Resource.Name)
	}
	assert.ElementsMatch(t, []string{"resolved web-0", "new late-0"}, changes)
}

// onDisk are the complete runs in Gatekeeper's channel directory, oldest first.
func (e *gkEnv) onDisk(t *testing.T) []gatekeepertest.Run {
	t.Helper()
	runs, err := e.g.Runs()
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	return runs
}

// since are the runs recorded from first on.
func (e *gkEnv) since(t *testing.T, first gatekeepertest.Run) []gatekeepertest.Run {
	t.Helper()
	runs := e.log.Runs()
	for i, r := range runs {
		if r.ID == first.ID && r.Inode == first.Inode {
			return runs[i:]
		}
	}
	t.Fatalf("run %s is not recorded", first.ID)
	return nil
}

// gkRecord is what identifies a decision record: the decision's attributes, and its state (audit_changes).
type gkRecord struct {
	policyresult.Decision
	State policyresult.State
}

// runRecords are the records of the violations of runs, one each.
func runRecords(runs ...gatekeepertest.Run) []gkRecord {
	var out []gkRecord
	for _, run := range runs {
		for _, v := range run.Violations {
			out = append(out, gkRecord{Decision: auditDecision(run, v)})
		}
	}
	return out
}

// auditDecision is the decision of a violation of an audit run: at the run's time, identified by the run and
// what the violation is about.
func auditDecision(run gatekeepertest.Run, v gatekeepertest.Message) policyresult.Decision {
	d := policyresult.Decision{
		Cluster: gkCluster, Kind: policyresult.DecisionKindAudit, Source: "gatekeeper",
		Policy: v.Kind, Rule: v.Name, Action: policyresult.ParseAction(v.EnforcementAction), Messages: []string{v.Message},
		// Pods are of the core group: the API version alone.
		Resource:  policyresult.Resource{APIVersion: v.ResourceAPIVersion, Kind: v.ResourceKind, Namespace: v.ResourceNamespace, Name: v.ResourceName},
		Timestamp: run.Start(),
	}
	d.ID = policyresult.ContentDecisionID(d.Kind, run.ID, d.Policy, d.Rule, v.ResourceGroup, v.ResourceKind, v.ResourceNamespace, v.ResourceName, v.Message)
	return d
}

// changeRecords are the records audit_changes sends for consecutive runs: the first run's violations as new,
// then for each run the violations new or enforced differently since the run before, and a resolved record,
// at the run's time, for each violation the run before reported and this one does not.
func changeRecords(runs []gatekeepertest.Run) []gkRecord {
	var out []gkRecord
	prev := map[policyresult.Hash]policyresult.Decision{}
	for _, run := range runs {
		next := map[policyresult.Hash]policyresult.Decision{}
		for _, v := range run.Violations {
			d := auditDecision(run, v)
			h := d.ViolationHashes()
			next[h.Key] = d
			switch p, ok := prev[h.Key]; {
			case !ok:
				out = append(out, gkRecord{Decision: d, State: policyresult.StateNew})
			case p.ViolationHashes().ID != h.ID:
				out = append(out, gkRecord{Decision: d, State: policyresult.StateChanged})
			}
		}
		for key, p := range prev {
			if _, ok := next[key]; !ok {
				p.Timestamp = run.Start()
				p.ID = policyresult.ContentDecisionID(p.Kind, run.ID, string(policyresult.StateResolved), key.String())
				out = append(out, gkRecord{Decision: p, State: policyresult.StateResolved})
			}
		}
		prev = next
	}
	return out
}

// readGKRecords reads the records of a file the durable_file exporter wrote; each must be a decision.
func readGKRecords(t *testing.T, path string) []gkRecord {
	t.Helper()
	var out []gkRecord
	collectortest.EachFileRecord(t, path, func(res pcommon.Resource, lr plog.LogRecord) {
		d, err := policyresult.ReadDecisionLogRecord(res, lr)
		require.NoError(t, err, "only decisions are emitted")
		var state string
		if v, ok := lr.Attributes().Get(policyresult.AttrResultState); ok {
			state = v.Str()
		}
		st, err := policyresult.ParseState(state)
		require.NoError(t, err)
		out = append(out, gkRecord{Decision: d, State: st})
	})
	return out
}

// waitGKRecords waits until path holds every record of want.
func waitGKRecords(t *testing.T, path string, want []gkRecord) {
	t.Helper()
	collectortest.Eventually(t, 60*time.Second, func() error {
		got := map[string]bool{}
		for _, r := range readGKRecords(t, path) {
			got[r.ID] = true
		}
		for _, r := range want {
			if !got[r.ID] {
				return fmt.Errorf("no record of %s/%s at %s in %s", r.Resource.Namespace, r.Resource.Name, r.Timestamp, path)
			}
		}
		return nil
	})
}

type gkCollectorOptions struct {
	export string
	// storage is file_storage's directory; a directory of the collector's own when empty.
	storage string
	// out is the file written; <dir>/<n>.jsonl when empty.
	out          string
	batch        int
	auditChanges bool
}

type gkCollector struct {
	*collectortest.Collector
	out, metricsURL string
}

// startGKCollector runs the binary on a config of decision_logs::gatekeeper_export with file_storage into a
// durable_file exporter that writes each batch before the pipeline accepts it (no sending queue), and waits
// until it is healthy.
func startGKCollector(t *testing.T, dir string, o gkCollectorOptions) *gkCollector {
	t.Helper()
	cfgFile, err := os.CreateTemp(dir, "config-*.yaml")
	require.NoError(t, err)
	name := filepath.Base(cfgFile.Name())
	if o.storage == "" {
		o.storage = filepath.Join(dir, "storage")
	}
	if o.out == "" {
		o.out = filepath.Join(dir, name[:len(name)-len(".yaml")]+".jsonl")
	}
	if o.batch == 0 {
		o.batch = 1000
	}
	health, metrics := collectortest.FreePort(t), collectortest.FreePort(t)
	_, err = fmt.Fprintf(cfgFile, `
extensions:
  health_check:
    endpoint: 127.0.0.1:%d
  file_storage:
    directory: %s
    create_directory: true
receivers:
  decision_logs:
    cluster_name: %s
    storage: file_storage
    max_batch_records: %d
    gatekeeper_export:
      path: %s
      poll_interval: 100ms
      audit_changes: %t
exporters:
  durable_file:
    path: %s
    sync: false
    sending_queue:
      enabled: false
service:
  extensions: [health_check, file_storage]
  pipelines:
    logs:
      receivers: [decision_logs]
      exporters: [durable_file]
  telemetry:
%s`, health, o.storage, gkCluster, o.batch, o.export, o.auditChanges, o.out, collectortest.MetricsTelemetry(metrics))
	require.NoError(t, err)
	require.NoError(t, cfgFile.Close())
	c := collectortest.Start(t, dir, cfgFile.Name())
	c.WaitHealthy(collectortest.HealthURL(health))
	return &gkCollector{Collector: c, out: o.out, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)}
}

// metric is the sum of the collector's self-metric name over the series matching labels; 0 when none does yet.
func (c *gkCollector) metric(t *testing.T, name, labels string) float64 {
	t.Helper()
	v, err := selfmetrics.ReadCounter(c.metricsURL, name, labels)
	require.NoError(t, err)
	return v
}

func (c *gkCollector) gaps(t *testing.T) float64 {
	t.Helper()
	return c.metric(t, "otelcol_receiver_decision_logs_export_gaps", fmt.Sprintf("channel=%q", gatekeepertest.Channel))
}

// waitRunsRead waits until the collector has read at least n audit runs to their end: their records are
// written.
func (c *gkCollector) waitRunsRead(t *testing.T, n int) {
	t.Helper()
	labels := fmt.Sprintf("channel=%q,file_kind=%q", gatekeepertest.Channel, "audit")
	collectortest.Eventually(t, 60*time.Second, func() error {
		if read := c.metric(t, "otelcol_receiver_decision_logs_export_files", labels); read < float64(n) {
			return fmt.Errorf("%v of %d runs read", read, n)
		}
		return nil
	})
}

// pipeOut is a FIFO the exporter writes into, with a buffer of one page: the exporter blocks once the test
// stops reading.
type pipeOut struct {
	path  string
	lines chan []byte
	// read are the whole lines read.
	read bytes.Buffer
}

// fSetPipeSize is Linux's F_SETPIPE_SZ fcntl.
const fSetPipeSize = 1031

func newPipeOut(t *testing.T, path string) *pipeOut {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	// A non-blocking read end opens without a writer; it holds the pipe, and the size set here, until the
	// blocking read end below is open.
	hold, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	rc, err := hold.SyscallConn()
	require.NoError(t, err)
	var errno syscall.Errno
	require.NoError(t, rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, uintptr(os.Getpagesize()))
	}))
	require.Zero(t, errno, "F_SETPIPE_SZ")
	p := &pipeOut{path: path, lines: make(chan []byte)}
	go func() {
		defer close(p.lines)
		// Opens once the exporter opened the write end; reads until every writer is gone.
		f, err := os.Open(path)
		hold.Close()
		if err != nil {
			return
		}
		defer f.Close()
		br := bufio.NewReader(f)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				// A line the killed exporter was writing is torn: it was not written, nor accepted.
				return
			}
			p.lines <- line
		}
	}()
	t.Cleanup(func() {
		// A writer that comes and goes ends the reader's open, should no exporter have opened the pipe.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		for range p.lines {
		}
	})
	return p
}

// waitLine reads lines until the first one has come.
func (p *pipeOut) waitLine(t *testing.T) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		require.True(t, ok, "the exporter closed the pipe")
		p.keep(line)
	case <-time.After(60 * time.Second):
		t.Fatal("nothing written into the pipe")
	}
}

func (p *pipeOut) keep(line []byte) { p.read.Write(line) }

// drain reads the pipe to its end, once the writer is gone, and writes every whole line read into path.
func (p *pipeOut) drain(t *testing.T, path string) {
	t.Helper()
	for line := range p.lines {
		p.keep(line)
	}
	require.NoError(t, os.WriteFile(path, p.read.Bytes(), 0o600))
}
