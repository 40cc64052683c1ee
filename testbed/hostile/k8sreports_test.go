// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const reportsNamespace = "hostile"

var policyReportGVR = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}

// fanoutReport is a PolicyReport whose one result, with a message of msgBytes, lists subjects subject
// resources, each written by subject(i).
func fanoutReport(name string, subjects, msgBytes int, subject func(i int) string) *unstructured.Unstructured {
	var b strings.Builder
	fmt.Fprintf(&b, `{"apiVersion":"wgpolicyk8s.io/v1alpha2","kind":"PolicyReport","metadata":{"name":%q,"namespace":%q},`, name, reportsNamespace)
	fmt.Fprintf(&b, `"results":[{"source":"kyverno","policy":"require-labels","rule":"check-team","result":"fail","message":%q,"resources":[`,
		strings.Repeat("m", msgBytes))
	for i := range subjects {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(subject(i))
	}
	b.WriteString(`]}]}`)
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(b.String()), &obj.Object); err != nil {
		panic(err)
	}
	return obj
}

// podSubject is a subject as Kyverno writes it (about 70 bytes).
func podSubject(i int) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","namespace":%q,"name":"pod-%05d"}`, reportsNamespace, i)
}

// reportsAPI is a real etcd + kube-apiserver with the PolicyReport CRD, and the kubeconfig the default config's
// k8s_reports receiver reads from $KUBECONFIG.
type reportsAPI struct {
	t          *testing.T
	dc         dynamic.Interface
	kubeconfig string
}

func startReportsAPI(t *testing.T) *reportsAPI {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (skipped with -short)")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(stop)
	cluster.InstallCRDs(t, filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "testdata", "crds", "wgpolicyk8s.io.yaml"))
	cluster.CreateNamespace(t, reportsNamespace)
	_, dc := cluster.Clients(t)
	return &reportsAPI{t: t, dc: dc, kubeconfig: cluster.Kubeconfig(t, apiserver.AdminToken)}
}

func (a *reportsAPI) create(obj *unstructured.Unstructured) {
	a.t.Helper()
	raw, err := json.Marshal(obj.Object)
	require.NoError(a.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = a.dc.Resource(policyReportGVR).Namespace(reportsNamespace).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(a.t, err, "%s: %d bytes", obj.GetName(), len(raw))
	a.t.Logf("created %s: %d bytes", obj.GetName(), len(raw))
}

// reportRecord is a result record as these tests tell them apart.
type reportRecord struct {
	report, subject string
	state           policyresult.State
}

// reportRecords counts the result records written to ./data/results (the default config's durable_file), and
// how many carry a body with other than exactly their own subject.
func reportRecords(t *testing.T, tg *Target) (map[reportRecord]int, int) {
	out, badBodies := map[reportRecord]int{}, 0
	collectortest.EachFileRecord(t, filepath.Join(tg.Dir, "data", "results", "policy-results.jsonl"), func(res pcommon.Resource, lr plog.LogRecord) {
		r, err := policyresult.ReadLogRecord(res, lr)
		if err != nil {
			return // a decision
		}
		out[reportRecord{r.Report.Name, r.Resource.Name, r.State}]++
		if lr.Body().Type() != pcommon.ValueTypeMap {
			return
		}
		resources, _ := lr.Body().Map().Get("resources")
		if resources.Type() != pcommon.ValueTypeSlice || resources.Slice().Len() != 1 {
			badBodies++
			return
		}
		if name, _ := resources.Slice().At(0).Map().Get("name"); name.Str() != r.Resource.Name {
			badBodies++
		}
	})
	return out, badBodies
}

// recordsOf sums the records of one report, and the subjects emitted more than once.
func recordsOf(recs map[reportRecord]int, report string) (records, repeated int) {
	for k, n := range recs {
		if k.report == report {
			records += n
			repeated += n - 1
		}
	}
	return records, repeated
}

// waitReport waits until report has n records in ./data/results.
func waitReport(t *testing.T, tg *Target, report string, n int, timeout time.Duration) {
	t.Helper()
	tg.WaitBounded(timeout, func() error {
		recs, _ := reportRecords(t, tg)
		if got, _ := recordsOf(recs, report); got < n {
			return fmt.Errorf("%s: %d of %d records", report, got, n)
		}
		return nil
	})
}

// waitTooLarge waits until the collector counted want reports as too large, and returns the count.
func waitTooLarge(t *testing.T, tg *Target, want float64) float64 {
	t.Helper()
	var c float64
	tg.WaitBounded(30*time.Second, func() error {
		if c = tg.Metric("otelcol_receiver_k8s_reports_errors", `reason="too_large"`); c != want {
			return fmt.Errorf(`errors{reason="too_large"} = %g, want %g`, c, want)
		}
		return nil
	})
	return c
}

// startReportsCollector runs the default config with its k8s_reports receiver on api.
func startReportsCollector(t *testing.T, api *reportsAPI) *Target {
	return StartDefault(t, "", "KUBECONFIG="+api.kubeconfig, "OTELCOL_POLICY_CLUSTER_NAME=hostile")
}

// TestK8sReportsFanOut: one PolicyReport whose one result lists as many subjects as etcd takes (20,000, 1.4
// MB; 3,000 at short scale). Before, each of its N records carried the whole result with all N subjects and
// the report went out as one batch: 2,000 subjects took the collector past 1.6 GiB, more never wrote a
// record, and since nothing was committed every restart (and every next leader) died on it again. Now each
// record's body carries its own subject, the report goes out in batches of max_batch_records and is committed
// after the last.
func TestK8sReportsFanOut(t *testing.T) {
	api := startReportsAPI(t)
	tg := startReportsCollector(t, api)
	subjects := pick(3000, 20_000)

	tg.Attack("k8sreports-fanout", func() map[string]float64 {
		api.create(fanoutReport("fanout", subjects, 40, podSubject))
		waitReport(t, tg, "fanout", subjects, pick(60*time.Second, 3*time.Minute))
		return map[string]float64{"results_new": tg.Metric("otelcol_receiver_k8s_reports_results", `state="new"`)}
	})
	recs, badBodies := reportRecords(t, tg)
	n, repeated := recordsOf(recs, "fanout")
	assert.Equal(t, subjects, n, "one record per subject")
	assert.Zero(t, repeated)
	assert.Zero(t, badBodies, "every body carries its own subject only")

	// The restarted collector lists the report again: it was committed, so nothing of it is emitted again.
	// The signal report, created after the restart, is handled after it.
	tg.Attack("k8sreports-fanout-restart", func() map[string]float64 {
		tg.Restart()
		api.create(fanoutReport("signal-1", 2, 40, podSubject))
		waitReport(t, tg, "signal-1", 2, time.Minute)
		return map[string]float64{"results_new": tg.Metric("otelcol_receiver_k8s_reports_results", `state="new"`)}
	})
	recs, _ = reportRecords(t, tg)
	n, _ = recordsOf(recs, "fanout")
	assert.Equal(t, subjects, n, "nothing committed is emitted again")
}

// TestK8sReportsTooLarge: reports that fan out beyond the budget (max_report_records, max_report_bytes) are
// counted (errors{reason="too_large"}), logged with their name and skipped whole, and after a restart skipped
// again without being read; the collector stays healthy and reports after them are delivered.
func TestK8sReportsTooLarge(t *testing.T) {
	api := startReportsAPI(t)
	tg := startReportsCollector(t, api)

	// Beyond the default budget: "wide" fans out to more records than max_report_records (50,000) with
	// 55,000 subjects of 18 bytes (80,000 at full scale), "heavy" to more bytes than max_report_bytes (32 MiB)
	// with a 500 KB message repeated for 5,000 subjects, 2.5 GB of bodies in an 870 KB object (700 KB ×
	// 10,000 at full scale). Both are counted and skipped; nothing of them is written.
	wide := pick(55_000, 80_000)
	tg.Attack("k8sreports-too-large", func() map[string]float64 {
		api.create(fanoutReport("wide", wide, 10, func(i int) string { return fmt.Sprintf(`{"name":"w%05d"}`, i) }))
		api.create(fanoutReport("heavy", pick(5000, 10_000), pick(500_000, 700_000), podSubject))
		api.create(fanoutReport("signal-2", 2, 40, podSubject))
		waitReport(t, tg, "signal-2", 2, time.Minute)
		return map[string]float64{"too_large": waitTooLarge(t, tg, 2)}
	})
	assert.Contains(t, tg.C.Output(), `"object": "policyreports.wgpolicyk8s.io hostile/wide"`)
	assert.Contains(t, tg.C.Output(), `"object": "policyreports.wgpolicyk8s.io hostile/heavy"`)

	// After a restart both are skipped again, without being read (their versions are in the state), and
	// counted again; the collector stays healthy and the signal after them is delivered.
	tg.Attack("k8sreports-too-large-restart", func() map[string]float64 {
		tg.Restart()
		api.create(fanoutReport("signal-3", 2, 40, podSubject))
		waitReport(t, tg, "signal-3", 2, time.Minute)
		return map[string]float64{"too_large": waitTooLarge(t, tg, 2)}
	})
	recs, _ := reportRecords(t, tg)
	for _, name := range []string{"wide", "heavy"} {
		n, _ := recordsOf(recs, name)
		assert.Zero(t, n, "nothing of %s", name)
	}
}
