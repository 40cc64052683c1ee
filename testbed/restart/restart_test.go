// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package restart tests the report watcher across a restart at scale: the collector binary with the default
// config watches 1,000 PolicyReports in a real API server; while it is stopped, 100 reports change, 50 are
// deleted and 50 are created; after the restart it must emit exactly the new, changed and resolved results, and
// nothing else.
package restart

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

const (
	reports  = 1000
	changed  = 100
	deleted  = 50
	created  = 50
	results  = 2 // per report
	resultsF = "data/results/policy-results.jsonl"
)

var gvr = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}

// report i, whose first result fails when failing is set.
func report(i int, failing bool) *unstructured.Unstructured {
	first := "pass"
	if failing {
		first = "fail"
	}
	name := fmt.Sprintf("pod-%04d", i)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"scope":    map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": name},
		"results": []any{
			map[string]any{"source": "kyverno", "policy": "disallow-latest-tag", "rule": "validate-image-tag", "result": first},
			map[string]any{"source": "kyverno", "policy": "require-labels", "rule": "check-team", "result": "pass"},
		},
	}}
}

// records reads every result record the durable_file exporter wrote, as "pod policy state outcome".
func records(t *testing.T, dir string) []string {
	f, err := os.Open(filepath.Join(dir, resultsF))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(sc.Bytes())
		require.NoError(t, err)
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					r, err := policyresult.ReadLogRecord(rl.Resource(), lr)
					if errors.Is(err, policyresult.ErrNotResult) {
						continue
					}
					require.NoError(t, err)
					out = append(out, fmt.Sprintf("%s %s %s %s", r.Resource.Name, r.Policy, r.State, r.Outcome))
				}
			}
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func startCollector(t *testing.T, dir string, env []string) *collectortest.Collector {
	overlay, p := collectortest.DefaultConfigOverlay(t, dir)
	c := collectortest.StartEnv(t, dir, env, collectortest.DefaultConfig(t), overlay)
	c.WaitHealthy(collectortest.HealthURL(p.Health))
	return c
}

func waitRecords(t *testing.T, dir string, n int) []string {
	var got []string
	collectortest.Eventually(t, 2*time.Minute, func() error {
		if got = records(t, dir); len(got) < n {
			return fmt.Errorf("%d of %d records", len(got), n)
		}
		return nil
	})
	return got
}

func TestRestartEmitsExactlyWhatChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	defer stop()
	cluster.InstallCRDs(t, filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "testdata", "crds", "wgpolicyk8s.io.yaml"))
	cluster.CreateNamespace(t, "shop")
	for i := range reports {
		cluster.Apply(t, gvr, report(i, false))
	}

	dir := t.TempDir()
	env := []string{"KUBECONFIG=" + cluster.Kubeconfig(t, apiserver.AdminToken), "OTELCOL_POLICY_CLUSTER_NAME=bench"}
	c := startCollector(t, dir, env)
	initial := waitRecords(t, dir, reports*results)
	c.Stop()
	require.Len(t, initial, reports*results, "the initial sync emits every result once")

	// While the collector is down: reports 0-99 change one outcome, 100-149 are deleted, 1000-1049 are new.
	want := map[string]int{}
	for i := range changed {
		cluster.Apply(t, gvr, report(i, true))
		want[fmt.Sprintf("pod-%04d disallow-latest-tag changed fail", i)]++
	}
	for i := changed; i < changed+deleted; i++ {
		cluster.Delete(t, gvr, "shop", fmt.Sprintf("pod-%04d", i))
		want[fmt.Sprintf("pod-%04d disallow-latest-tag resolved pass", i)]++
		want[fmt.Sprintf("pod-%04d require-labels resolved pass", i)]++
	}
	for i := reports; i < reports+created; i++ {
		cluster.Apply(t, gvr, report(i, false))
		want[fmt.Sprintf("pod-%04d disallow-latest-tag new pass", i)]++
		want[fmt.Sprintf("pod-%04d require-labels new pass", i)]++
	}
	wantN := changed + deleted*results + created*results

	start := time.Now()
	c = startCollector(t, dir, env)
	waitRecords(t, dir, len(initial)+wantN)
	took := time.Since(start)
	t.Logf("the %d expected records after the restart took %s", wantN, took.Round(time.Millisecond))
	// Stay a moment so that a record too many, if any, would show.
	time.Sleep(3 * time.Second)
	c.Stop()
	all := records(t, dir)
	got := map[string]int{}
	for _, r := range all[len(initial):] {
		got[r]++
	}
	assert.Equal(t, want, got, "exactly the changed, resolved and new results, each once")
	assert.Len(t, all, len(initial)+wantN)

	unexpected := 0
	for r, n := range got {
		unexpected += max(n-want[r], 0)
	}
	path, err := procsample.WriteResult(fmt.Sprintf("restart-%d-reports", reports), map[string]any{
		"reports": reports, "changed": changed, "deleted": deleted, "created": created,
		"initial_records": len(initial), "expected": wantN, "records_after_restart": len(all) - len(initial),
		"unexpected": unexpected, "expected_after_s": round(took.Seconds()),
		"date": time.Now().UTC().Format(time.DateOnly),
	})
	require.NoError(t, err)
	if path != "" {
		t.Logf("wrote %s", path)
	}
}

func round(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
