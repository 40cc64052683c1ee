// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// largeSubjects is about the most subjects of one result that etcd takes (1.5 MiB a request): 20,000 make
// an object of about 1.42 MB.
const largeSubjects = 20_000

const mib = 1 << 20

// tallySink counts records per report, subject and state and drops them, so that the test's heap holds only
// what the receiver holds. Every body must carry exactly the record's own subject.
type tallySink struct {
	t      *testing.T
	mu     sync.Mutex
	counts map[tallyKey]int
	total  int
}

type tallyKey struct {
	report, subject string
	state           policyresult.State
}

func newTallySink(t *testing.T) *tallySink { return &tallySink{t: t, counts: map[tallyKey]int{}} }

func (s *tallySink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *tallySink) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				r, err := policyresult.ReadLogRecord(rl.Resource(), lr)
				assert.NoError(s.t, err)
				if lr.Body().Type() == pcommon.ValueTypeMap {
					res, _ := lr.Body().Map().Get("resources")
					if assert.Equal(s.t, 1, res.Slice().Len(), "one subject in the body") {
						name, _ := res.Slice().At(0).Map().Get("name")
						assert.Equal(s.t, r.Resource.Name, name.Str())
					}
				}
				s.counts[tallyKey{r.Report.Name, r.Resource.Name, r.State}]++
				s.total++
			}
		}
	}
	return nil
}

func (s *tallySink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// of counts the records of one report in one state, and how many subjects came more than once.
func (s *tallySink) of(report string, state policyresult.State) (records, repeated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.counts {
		if k.report == report && k.state == state {
			records += n
			repeated += n - 1
		}
	}
	return records, repeated
}

func (s *tallySink) wait(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return s.count() >= n }, timeout, 20*time.Millisecond,
		"%d of %d records", s.count(), n)
}

// heapPeak samples the heap (live and not yet collected objects) until stopped.
type heapPeak struct {
	stop chan struct{}
	done chan uint64
}

func heapNow() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func watchHeap() *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), done: make(chan uint64)}
	go func() {
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapNow())
			select {
			case <-h.stop:
				h.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) peak() uint64 {
	close(h.stop)
	return <-h.done
}

// largeReport is the PolicyReport of fanoutReport in namespace shop, labelled for the test.
func largeReport(t *testing.T, name string, subjects int) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal(fanoutReport(name, "", subjects, 40), &obj.Object))
	obj.SetResourceVersion("")
	obj.SetLabels(map[string]string{"otelcol-test": testLabel(t)})
	return obj
}

func createReport(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	_, dc := cluster.Clients(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := dc.Resource(policyReportGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Delete(t, policyReportGVR, obj.GetNamespace(), obj.GetName()) })
}

// TestLargestReportFansOutWithinBoundedMemory is one result listing as many subjects as etcd takes: on the
// receiver before bodies carried only their own subject, this was 20,000 bodies of 20,000 subjects each
// (gigabytes) in one batch.
func TestLargestReportFansOutWithinBoundedMemory(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	storageDir := t.TempDir()
	big := largeReport(t, "big", largeSubjects)
	raw, err := json.Marshal(big.Object)
	require.NoError(t, err)
	t.Logf("one result, %d subjects: %d bytes", largeSubjects, len(raw))

	sink := newTallySink(t)
	tr := startReceiverInto(t, testConfig(t), apiserver.AdminToken, storageDir, map[component.ID]component.Component{}, sink)
	runtime.GC()
	base := heapNow()
	heap := watchHeap()
	createReport(t, big)
	big = nil
	sink.wait(t, largeSubjects, time.Minute)
	peak := heap.peak()
	t.Logf("watch: heap %.1f MiB before, peak %.1f MiB", float64(base)/mib, float64(peak)/mib)
	records, repeated := sink.of("big", policyresult.StateNew)
	assert.Equal(t, largeSubjects, records, "one record per subject")
	assert.Zero(t, repeated)
	// Measured: about 35 MiB over the baseline (the test's client request included).
	assert.Less(t, peak-min(base, peak), uint64(96*mib))
	tr.stop()

	// A new receiver on the same storage lists the report again: nothing was left uncommitted, so nothing is
	// emitted. The signal report, listed after it, shows the list was handled.
	sink = newTallySink(t)
	runtime.GC()
	base = heapNow()
	heap = watchHeap()
	tr = startReceiverInto(t, testConfig(t), apiserver.AdminToken, storageDir, map[component.ID]component.Component{}, sink)
	createReport(t, largeReport(t, "zz-signal", 2))
	sink.wait(t, 2, time.Minute)
	peak = heap.peak()
	t.Logf("restart: heap %.1f MiB before, peak %.1f MiB", float64(base)/mib, float64(peak)/mib)
	records, _ = sink.of("zz-signal", policyresult.StateNew)
	assert.Equal(t, 2, records)
	assert.Equal(t, 2, sink.count(), "nothing of the committed report again")
	assert.Less(t, peak-min(base, peak), uint64(96*mib))
	assert.NotEqual(t, componentstatus.StatusRecoverableError, lastStatus(tr))
}

// TestTooLargeReportIsSkippedAcrossRestarts: a version over the budget is counted and skipped, the results of
// the version before stay emitted, and after a restart it is skipped again without records.
func TestTooLargeReportIsSkippedAcrossRestarts(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	storageDir := t.TempDir()
	cfg := testConfig(t)
	cfg.MaxReportRecords = 2000

	tr := startReceiver(t, cfg, apiserver.AdminToken, storageDir)
	cluster.Apply(t, policyReportGVR, largeReport(t, "grows", 10))
	assert.Len(t, tr.waitRecords(10), 10)

	cluster.Apply(t, policyReportGVR, largeReport(t, "grows", 3000))
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusRecoverableError }, waitFor, tick)
	assert.Contains(t, tr.host.Last().Err().Error(), "policyreports.wgpolicyk8s.io shop/grows: 3000 records")
	assertErrorCount(t, tr, "policy_reports", "too_large", 1)
	cluster.Apply(t, policyReportGVR, largeReport(t, "signal", 1))
	recs := tr.waitRecords(1)
	assert.Equal(t, "signal", recs[0].Report.Name, "nothing of the report that is too large")
	tr.stop()

	tr = startReceiver(t, cfg, apiserver.AdminToken, storageDir)
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusRecoverableError }, waitFor, tick)
	require.Eventually(t, func() bool { return errorCount(tr, "policy_reports", "too_large") == 1 }, waitFor, tick,
		"skipped again, and counted")
	cluster.Apply(t, policyReportGVR, largeReport(t, "signal2", 1))
	recs = tr.waitRecords(1)
	assert.Equal(t, "signal2", recs[0].Report.Name)

	// Deleted, it resolves what its last readable version emitted, and the fault clears.
	cluster.Delete(t, policyReportGVR, "shop", "grows")
	recs = tr.waitRecords(10)
	for _, r := range recs {
		assert.Equal(t, policyresult.StateResolved, r.State)
	}
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusOK }, waitFor, tick)
	cluster.Delete(t, policyReportGVR, "shop", "signal")
	cluster.Delete(t, policyReportGVR, "shop", "signal2")
}
