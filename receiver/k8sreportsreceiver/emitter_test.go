// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// gateSink is a pipeline that answers each ConsumeLogs call with answer(call) (1-based), keeping what it
// accepted; calls reports every call's number and size.
type gateSink struct {
	consumertest.LogsSink
	answer func(call int) error
	calls  chan [2]int
	mu     sync.Mutex
	n      int
}

func newGateSink(answer func(call int) error) *gateSink {
	return &gateSink{answer: answer, calls: make(chan [2]int, 100)}
}

func (s *gateSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	s.mu.Lock()
	s.n++
	call := s.n
	s.mu.Unlock()
	s.calls <- [2]int{call, ld.LogRecordCount()}
	if err := s.answer(call); err != nil {
		return err
	}
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

// emitterRun is the receiver's emitter on a file_storage directory, fed by putting updates into its tracker
// as the watchers would.
type emitterRun struct {
	t      *testing.T
	rcv    *reportsReceiver
	host   *statustest.Host
	client storage.Client
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

func startEmitter(t *testing.T, cfg *Config, dir string, next *gateSink) *emitterRun {
	t.Helper()
	return startEmitterOn(t, cfg, dir, next, func(c storage.Client) storage.Client { return c })
}

// startEmitterOn is startEmitter with the storage client wrapped by wrap.
func startEmitterOn(t *testing.T, cfg *Config, dir string, next *gateSink, wrap func(storage.Client) storage.Client) *emitterRun {
	t.Helper()
	rcv, err := newReceiver(cfg, metadatatest.NewSettings(componenttest.NewTelemetry()), next)
	require.NoError(t, err)
	ext := filestoragetest.Start(t, dir)
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindReceiver, component.MustNewID("k8s_reports"), "")
	require.NoError(t, err)
	rcv.store = &stateStore{client: wrap(client)}
	emitted, err := rcv.store.load(context.Background())
	require.NoError(t, err)
	rcv.tracker = newTracker(maxPendingReports, cfg.MaxReportRecords, emitted)
	rcv.sync = newInitialSync(rcv.set.Logger)
	host := statustest.NewHost(nil)
	rcv.problems.start(host)
	for k, e := range emitted {
		rcv.refusals.update(k, e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &emitterRun{t: t, rcv: rcv, host: host, client: client, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		rcv.emit(ctx)
	}()
	t.Cleanup(func() {
		e.stop()
		require.NoError(t, ext.Shutdown(context.Background()))
	})
	return e
}

// stop ends the emitter as stopLeading does: a batch not accepted yet is abandoned, not committed.
func (e *emitterRun) stop() {
	if e.closed {
		return
	}
	e.closed = true
	e.cancel()
	e.rcv.tracker.close()
	<-e.done
	require.NoError(e.t, e.client.Close(context.Background()))
}

// put hands the version rv of a one-result report with subjects subjects to the emitter.
func (e *emitterRun) put(name, rv string, subjects int) {
	e.t.Helper()
	obj, err := parse.DecodeObject(policyReportGVR, fanoutReport(name, rv, subjects, 10))
	require.NoError(e.t, err)
	results, err := parse.PolicyReport(obj, e.rcv.cfg.budget())
	require.NoError(e.t, err)
	for i := range results {
		results[i].Cluster = e.rcv.cfg.ClusterName
	}
	require.NoError(e.t, e.rcv.tracker.put(context.Background(), objKey{policyReportGVR, "shop", name},
		&update{kind: "policy_reports", rv: rv, results: results}))
}

func (e *emitterRun) waitStatus(want componentstatus.Status) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { ev := e.host.Last(); return ev != nil && ev.Status() == want }, waitFor, tick, "status %s", want)
}

// stored is what the storage holds for a report, as the next leader would load it.
func (e *emitterRun) stored(name string) *emittedReport {
	loaded, err := (&stateStore{client: e.client}).load(context.Background())
	require.NoError(e.t, err)
	return loaded[objKey{policyReportGVR, "shop", name}]
}

// waitCall waits for the next ConsumeLogs call and returns its number and record count.
func waitCall(t *testing.T, s *gateSink) (int, int) {
	t.Helper()
	c := <-s.calls
	return c[0], c[1]
}

// subjectsOf lists each record's report, subject and state, checking that its body, if any, names only that
// subject.
func subjectsOf(t *testing.T, s *gateSink) []string {
	t.Helper()
	var out []string
	for _, ld := range s.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					r, err := policyresult.ReadLogRecord(rl.Resource(), lr)
					require.NoError(t, err)
					if lr.Body().Type() == pcommon.ValueTypeMap {
						resources := lr.Body().Map().AsRaw()["resources"].([]any)
						require.Len(t, resources, 1)
						assert.Equal(t, r.Resource.Name, resources[0].(map[string]any)["name"])
					}
					out = append(out, r.Report.Name+"/"+r.Resource.Name+" "+string(r.State))
				}
			}
		}
	}
	return out
}

func emitterConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ClusterName = "c1"
	cfg.MaxBatchRecords = 10
	return cfg
}

var errFull = errors.New("queue is full")

const waitFor, tick = 30 * time.Second, 10 * time.Millisecond

func TestReportSplitAcrossBatchesCommitsOnceAllAccepted(t *testing.T) {
	refused := make(chan struct{})
	sink := newGateSink(func(call int) error {
		if call == 2 {
			close(refused)
			return errFull
		}
		return nil
	})
	e := startEmitter(t, emitterConfig(), t.TempDir(), sink)
	e.put("a", "1", 25)
	e.put("b", "1", 3)

	<-refused
	// The first 10 records of a were accepted, the next 10 refused: nothing of a is committed.
	assert.Equal(t, 0, e.rcv.tracker.size())
	assert.Nil(t, e.stored("a"))

	// The refused batch is sent again, then the rest of a and b: with b, or in a batch of their own when the
	// builder had built the rest of a before b arrived.
	var sizes [][2]int
	accepted := 0
	for accepted < 28 {
		call, n := waitCall(t, sink)
		sizes = append(sizes, [2]int{call, n})
		if call != 2 {
			accepted += n
		}
	}
	require.GreaterOrEqual(t, len(sizes), 4)
	assert.Equal(t, [][2]int{{1, 10}, {2, 10}, {3, 10}}, sizes[:3], "max_batch_records holds within a report")
	for _, s := range sizes[3:] {
		assert.LessOrEqual(t, s[1], 10)
	}
	// Committed to storage after the last batch, in one transaction.
	require.Eventually(t, func() bool { return e.stored("b") != nil }, waitFor, tick)
	assert.NotNil(t, e.stored("a"))
	recs := subjectsOf(t, sink)
	assert.Len(t, recs, 28)
	assert.Equal(t, "a/pod-00000 new", recs[0])
	assert.Equal(t, "b/pod-00002 new", recs[27])
}

func TestRestartReemitsOnlyWhatWasNotCommitted(t *testing.T) {
	dir := t.TempDir()
	refusing := make(chan struct{})
	sink := newGateSink(func(call int) error {
		if call == 2 {
			close(refusing)
		}
		if call >= 2 {
			return errFull
		}
		return nil
	})
	e := startEmitter(t, emitterConfig(), dir, sink)
	e.put("b", "1", 3)
	e.put("a", "1", 25)
	<-refusing
	// b and the first 7 records of a were accepted; the process stops while the pipeline refuses the rest.
	e.stop()

	sink = newGateSink(func(int) error { return nil })
	e = startEmitter(t, emitterConfig(), dir, sink)
	require.Equal(t, 1, e.rcv.tracker.size(), "b was committed, a was not")
	// The watchers list both reports again.
	e.put("b", "1", 3)
	e.put("a", "1", 25)
	var total int
	for total < 25 {
		_, n := waitCall(t, sink)
		total += n
	}
	require.Eventually(t, func() bool { return e.rcv.tracker.size() == 2 }, waitFor, tick)
	recs := subjectsOf(t, sink)
	assert.Len(t, recs, 25, "all of a again (at least once), nothing of b")
	for _, r := range recs {
		assert.Regexp(t, `^a/pod-\d+ new$`, r)
	}
	// A version with one subject fewer is one resolved record; a restart after it emits nothing.
	e.put("a", "2", 24)
	_, n := waitCall(t, sink)
	assert.Equal(t, 1, n)
	require.Eventually(t, func() bool { return len(subjectsOf(t, sink)) == 26 }, waitFor, tick)
}

func TestBatchBytesBoundBigBodies(t *testing.T) {
	cfg := emitterConfig()
	cfg.MaxBatchBytes = minBodyLimit
	sink := newGateSink(func(int) error { return nil })
	e := startEmitter(t, cfg, t.TempDir(), sink)
	obj, err := parse.DecodeObject(policyReportGVR, fanoutReport("big", "1", 5, 1500))
	require.NoError(t, err)
	results, err := parse.PolicyReport(obj, cfg.budget())
	require.NoError(t, err)
	require.Greater(t, results[0].Body.Size(), 1500)
	huge, err := parse.DecodeObject(policyReportGVR, fanoutReport("huge", "1", 2, 5000))
	require.NoError(t, err)
	hugeResults, err := parse.PolicyReport(huge, cfg.budget())
	require.NoError(t, err)
	require.NoError(t, e.rcv.tracker.put(context.Background(), objKey{policyReportGVR, "shop", "big"}, &update{rv: "1", results: results}))
	require.NoError(t, e.rcv.tracker.put(context.Background(), objKey{policyReportGVR, "shop", "huge"}, &update{rv: "1", results: hugeResults}))
	var sizes []int
	for total := 0; total < 7; {
		_, n := waitCall(t, sink)
		sizes = append(sizes, n)
		total += n
	}
	// Two bodies of 1.6 KB fit 4 KiB, three do not; a body over the bound goes alone.
	assert.Equal(t, []int{2, 2, 1, 1, 1}, sizes)
}

func TestRefusedReportState(t *testing.T) {
	dir := t.TempDir()
	sink := newGateSink(func(int) error { return nil })
	e := startEmitter(t, emitterConfig(), dir, sink)
	k := objKey{policyReportGVR, "shop", "a"}
	e.put("a", "1", 3)
	require.Eventually(t, func() bool { return e.rcv.tracker.size() == 1 }, waitFor, tick)

	// Version 2 is too large: nothing is emitted, and what version 1 emitted stays.
	require.NoError(t, e.rcv.tracker.put(context.Background(), k, &update{kind: "policy_reports", rv: "2", refused: &parse.Size{Records: 70_000, Bytes: 1 << 20}}))
	require.Eventually(t, func() bool {
		_, refused := e.rcv.tracker.refused(k, "2")
		return refused
	}, waitFor, tick)
	e.waitStatus(componentstatus.StatusRecoverableError)
	assert.Contains(t, e.host.Last().Err().Error(), "1 report(s) skipped as too large to process, e.g. policyreports.wgpolicyk8s.io shop/a: 70000 records")

	// After a restart the refusal is known without reading the report, and the status says so again.
	e.stop()
	sink = newGateSink(func(int) error { return nil })
	e = startEmitter(t, emitterConfig(), dir, sink)
	size, refused := e.rcv.tracker.refused(k, "2")
	assert.True(t, refused)
	assert.Equal(t, parse.Size{Records: 70_000, Bytes: 1 << 20}, size)
	_, refused = e.rcv.tracker.refused(k, "3")
	assert.False(t, refused, "another version is read")
	e.waitStatus(componentstatus.StatusRecoverableError)

	// Version 3 fits: diffed against what version 1 emitted, and the fault clears.
	e.put("a", "3", 2)
	_, n := waitCall(t, sink)
	assert.Equal(t, 1, n)
	require.Eventually(t, func() bool { return sink.LogRecordCount() == 1 }, waitFor, tick)
	assert.Equal(t, []string{"a/pod-00002 resolved"}, subjectsOf(t, sink))
	e.waitStatus(componentstatus.StatusOK)
}

// failingStorage fails its first failures batches, as a full disk would.
type failingStorage struct {
	storage.Client
	mu       sync.Mutex
	failures int
}

func (f *failingStorage) Batch(ctx context.Context, ops ...*storage.Operation) error {
	f.mu.Lock()
	fail := f.failures > 0
	f.failures--
	f.mu.Unlock()
	if fail {
		return errors.New("no space left on device")
	}
	return f.Client.Batch(ctx, ops...)
}

func TestFailedStorageWriteIsRepeatedWithTheNext(t *testing.T) {
	sink := newGateSink(func(int) error { return nil })
	e := startEmitterOn(t, emitterConfig(), t.TempDir(), sink, func(c storage.Client) storage.Client {
		return &failingStorage{Client: c, failures: 1}
	})
	e.put("a", "1", 3)
	require.Eventually(t, func() bool { return e.rcv.tracker.size() == 1 }, waitFor, tick)
	e.waitStatus(componentstatus.StatusRecoverableError)
	assert.Nil(t, e.stored("a"), "the write failed")

	// The same version listed again emits nothing and would not be written again, but what the failed write
	// left out goes with the next one.
	e.put("a", "1", 3)
	e.put("b", "1", 1)
	require.Eventually(t, func() bool { return e.stored("b") != nil }, waitFor, tick)
	assert.NotNil(t, e.stored("a"))
	assert.Len(t, subjectsOf(t, sink), 4)
	e.waitStatus(componentstatus.StatusOK)
}
