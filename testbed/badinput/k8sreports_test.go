// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package badinput

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"
)

const (
	errorsMetric = "otelcol_receiver_k8s_reports_errors"
	testLabel    = "badinput"
	namespace    = "badinput"
	// largeResults is the most results of the form below that fit etcd's default request limit
	// (--max-request-bytes 1.5 MiB): 30,000 make an object of about 1.41 MB.
	largeResults = 30_000
)

var policyReportGVR = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}

// k8sReceiver is a k8s_reports receiver started through its public factory against a real API server.
type k8sReceiver struct {
	t    *testing.T
	sink *consumertest.LogsSink
	tel  *componenttest.Telemetry
	dc   dynamic.Interface
}

func startK8sReports(t *testing.T) *k8sReceiver {
	t.Helper()
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (skipped with -short)")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(stop)
	cluster.InstallCRDs(t, "testdata/policyreports-loose.yaml")
	cluster.CreateNamespace(t, namespace)
	t.Setenv("KUBECONFIG", cluster.Kubeconfig(t, apiserver.AdminToken))
	_, dc := cluster.Clients(t)

	f := k8sreportsreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*k8sreportsreceiver.Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.ClusterName = "badinput"
	cfg.Kinds = k8sreportsreceiver.KindsConfig{PolicyReports: true}
	cfg.LabelSelector = "otelcol-test=" + testLabel
	cfg.DiscoveryInterval = time.Second
	require.NoError(t, cfg.Validate())

	kr := &k8sReceiver{t: t, sink: new(consumertest.LogsSink), tel: componenttest.NewTelemetry(), dc: dc}
	set := receivertest.NewNopSettings(f.Type())
	set.TelemetrySettings = kr.tel.NewTelemetrySettings()
	rcv, err := f.CreateLogs(context.Background(), set, cfg, kr.sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, rcv.Shutdown(context.Background()))
		require.NoError(t, kr.tel.Shutdown(context.Background()))
	})
	return kr
}

// report is a PolicyReport in the test namespace with the given results (any JSON value).
func report(name string, results any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2",
		"kind":       "PolicyReport",
		"metadata": map[string]any{
			"name": name, "namespace": namespace,
			"labels": map[string]any{"otelcol-test": testLabel},
		},
		"results": results,
	}}
}

// compactResults are n results of about 47 bytes each, told apart by rule.
func compactResults(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"policy": "p", "rule": fmt.Sprintf("r%05d", i), "result": "pass"}
	}
	return out
}

func goodResults(rules ...string) []any {
	out := make([]any, len(rules))
	for i, r := range rules {
		out[i] = map[string]any{"policy": "require-labels", "rule": r, "result": "fail", "message": "label missing",
			"resources": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": "pod-" + r}}}
	}
	return out
}

func (kr *k8sReceiver) create(obj *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := kr.dc.Resource(policyReportGVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func (kr *k8sReceiver) update(obj *unstructured.Unstructured) {
	kr.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cur, err := kr.dc.Resource(policyReportGVR).Namespace(namespace).Get(ctx, obj.GetName(), metav1.GetOptions{})
	require.NoError(kr.t, err)
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = kr.dc.Resource(policyReportGVR).Namespace(namespace).Update(ctx, obj, metav1.UpdateOptions{})
	require.NoError(kr.t, err)
}

func (kr *k8sReceiver) malformed() int64 {
	return counter(kr.t, kr.tel, errorsMetric, map[string]string{"kind": "policy_reports", "reason": "malformed"})
}

// records waits until n records arrived and for a quiet half second, returns them and empties the sink.
func (kr *k8sReceiver) records(n int, timeout time.Duration) []policyresult.Result {
	kr.t.Helper()
	deadline := time.Now().Add(timeout)
	for kr.sink.LogRecordCount() < n {
		if time.Now().After(deadline) {
			kr.t.Fatalf("%d of %d records after %s", kr.sink.LogRecordCount(), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	var out []policyresult.Result
	for _, ld := range kr.sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					r, err := policyresult.ReadLogRecord(rl.Resource(), lr)
					require.NoError(kr.t, err)
					out = append(out, r)
				}
			}
		}
	}
	require.Len(kr.t, out, n, "exactly %d records", n)
	kr.sink.Reset()
	return out
}

func rulesOf(recs []policyresult.Result) map[string]int {
	m := map[string]int{}
	for _, r := range recs {
		m[r.Report.Name+"/"+r.Rule]++
	}
	return m
}

// TestK8sReportsBadInput runs the cases in order against one receiver and one control plane (starting one
// costs 5-15 s): each case checks its own records and counters, and that the receiver still delivers a good
// report afterwards.
func TestK8sReportsBadInput(t *testing.T) {
	kr := startK8sReports(t)

	good := 0
	stillWorks := func(t *testing.T) {
		t.Helper()
		good++
		name := fmt.Sprintf("good-%d", good)
		require.NoError(t, kr.create(report(name, goodResults("a", "b"))))
		recs := kr.records(2, 30*time.Second)
		assert.Equal(t, map[string]int{name + "/a": 1, name + "/b": 1}, rulesOf(recs))
		for _, r := range recs {
			assert.Equal(t, policyresult.StateNew, r.State)
			assert.Equal(t, policyresult.OutcomeFail, r.Outcome)
		}
	}
	stillWorks(t) // the receiver runs before any bad input

	t.Run("100,000 results do not fit the API server's request limit", func(t *testing.T) {
		obj := report("huge", compactResults(100_000))
		raw, err := json.Marshal(obj.Object)
		require.NoError(t, err)
		err = kr.create(obj)
		t.Logf("%d bytes: %v", len(raw), err)
		require.Error(t, err, "a %d-byte object", len(raw))
		assert.True(t, apierrors.IsRequestEntityTooLargeError(err), "413 from kube-apiserver (3 MiB limit): %v", err)
		stillWorks(t)
	})

	t.Run("an object over etcd's 1.5 MiB value limit", func(t *testing.T) {
		obj := report("over-etcd", compactResults(40_000))
		raw, err := json.Marshal(obj.Object)
		require.NoError(t, err)
		require.Less(t, len(raw), 3<<20, "under the API server's own limit")
		err = kr.create(obj)
		t.Logf("%d bytes: %v", len(raw), err)
		require.Error(t, err, "a %d-byte object", len(raw))
		assert.Contains(t, err.Error(), "request is too large")
		stillWorks(t)
	})

	t.Run("the largest report that fits: ~1.41 MB, 30,000 results", func(t *testing.T) {
		obj := report("large", compactResults(largeResults))
		raw, err := json.Marshal(obj.Object)
		require.NoError(t, err)
		require.NoError(t, kr.create(obj), "%d bytes", len(raw))
		runtime.GC()
		before := allocated()
		recs := kr.records(largeResults, 60*time.Second)
		grew := allocated() - before
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("%d bytes, %d records: %.1f MiB allocated while receiving, heap %.1f MiB afterwards (records included)",
			len(raw), len(recs), float64(grew)/mib, float64(ms.HeapAlloc)/mib)
		rules := rulesOf(recs)
		assert.Len(t, rules, largeResults, "every result once")
		for rule, n := range rules {
			if n != 1 {
				t.Errorf("%s emitted %d times", rule, n)
			}
		}
		// Measured about 6 KiB per result (176 MiB), garbage included: decoding, the records (in the sink), the
		// receiver's diff state; the live heap afterwards is about 25 MiB.
		assert.Less(t, grew, uint64(largeResults)*12<<10, "allocation proportional to the results, not more")
		stillWorks(t)
	})

	malformed := []struct {
		name    string
		results any
	}{
		{"result: 42", []any{map[string]any{"policy": "p", "rule": "ok", "result": "pass"}, map[string]any{"policy": "p", "rule": "bad", "result": 42}}},
		{`resources: "x"`, []any{map[string]any{"policy": "p", "rule": "bad", "result": "fail", "resources": "x"}}},
		{`results: "not a list"`, "not a list"},
		{"results: [42, null]", []any{42, nil}},
		{"policy an object, scored a string", []any{map[string]any{"policy": map[string]any{"a": 1}, "rule": "r", "scored": "yes"}}},
	}
	for i, tc := range malformed {
		t.Run("malformed: "+tc.name, func(t *testing.T) {
			name := fmt.Sprintf("malformed-%d", i)
			before := kr.malformed()
			require.NoError(t, kr.create(report(name, tc.results)), "the loose CRD takes it")
			// The whole report is skipped and counted once: one bad result makes the report unreadable.
			require.Eventually(t, func() bool { return kr.malformed() == before+1 }, 30*time.Second, 20*time.Millisecond,
				"receiver_k8s_reports_errors{policy_reports,malformed}: %d", kr.malformed())
			stillWorks(t) // nothing of the malformed report arrives: exactly the good report's 2 records

			// Fixed, it is read like any other.
			kr.update(report(name, goodResults("fixed")))
			recs := kr.records(1, 30*time.Second)
			assert.Equal(t, map[string]int{name + "/fixed": 1}, rulesOf(recs))
			assert.Equal(t, before+1, kr.malformed(), "counted once")
		})
	}
}
