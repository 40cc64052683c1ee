// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

// The tests of this file run bin/otelcol-policy, as `make run` does, on the embedded default config.

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"gopkg.in/yaml.v3"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const resultsFile = "data/results/policy-results.jsonl"

func defaultConfig(t *testing.T) string { return collectortest.DefaultConfig(t) }

// ports are the default config's listeners, each moved to a free port.
type ports = collectortest.DefaultPorts

// start runs the default config with the ports overlay and, when set, the test's own overlay extra.
func start(t *testing.T, dir, extra string, env ...string) (*collectortest.Collector, ports) {
	return startOverlays(t, dir, env, extra)
}

// startOverlays runs the default config with the ports overlay and then each non-empty overlay, merged in order.
func startOverlays(t *testing.T, dir string, env []string, overlays ...string) (*collectortest.Collector, ports) {
	ov, p := collectortest.DefaultConfigOverlay(t, dir)
	if len(env) == 0 {
		env = []string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")}
	}
	configs := []string{defaultConfig(t), ov}
	for i, extra := range overlays {
		if extra == "" {
			continue
		}
		path := filepath.Join(dir, "extra.yaml")
		if i > 0 {
			path = filepath.Join(dir, fmt.Sprintf("extra-%d.yaml", i))
		}
		require.NoError(t, os.WriteFile(path, []byte(extra), 0o600))
		configs = append(configs, path)
	}
	c := collectortest.StartEnv(t, dir, env, configs...)
	c.WaitHealthy(collectortest.HealthURL(p.Health))
	return c, p
}

func sampleResult(name string) policyresult.Result {
	return policyresult.Result{
		Cluster: "laptop", Source: "kyverno", Policy: "disallow-privileged", Rule: "privileged-containers",
		Category: "Pod Security", Severity: policyresult.SeverityHigh, Outcome: policyresult.OutcomeFail,
		Message: "privileged mode is disallowed", State: policyresult.StateNew,
		Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name},
		Report:    policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "pol-" + name},
		Timestamp: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
	}
}

// sendOTLP posts results as one OTLP/HTTP JSON request and requires the collector to accept it.
func sendOTLP(t *testing.T, httpPort int, results ...policyresult.Result) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), results[0].Cluster)
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range results {
		lr := lrs.AppendEmpty()
		policyresult.WriteLogRecord(&results[i], lr)
		lr.Body().SetStr(results[i].Message)
	}
	body, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/logs", httpPort), "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// eachRecord calls f for every log record the durable_file exporter wrote under dir.
func eachRecord(t *testing.T, dir string, f func(res pcommon.Resource, lr plog.LogRecord)) {
	collectortest.EachFileRecord(t, filepath.Join(dir, resultsFile), f)
}

// readResults reads every result the durable_file exporter wrote under dir.
func readResults(t *testing.T, dir string) []policyresult.Result {
	var out []policyresult.Result
	eachRecord(t, dir, func(res pcommon.Resource, lr plog.LogRecord) {
		r, err := policyresult.ReadLogRecord(res, lr)
		if errors.Is(err, policyresult.ErrNotResult) {
			return
		}
		require.NoError(t, err)
		out = append(out, r)
	})
	return out
}

func waitResults(t *testing.T, dir string, n int) []policyresult.Result {
	var got []policyresult.Result
	collectortest.Eventually(t, 30*time.Second, func() error {
		if got = readResults(t, dir); len(got) < n {
			return fmt.Errorf("%d of %d results in %s", len(got), n, resultsFile)
		}
		return nil
	})
	return got
}

// waitDrained waits until the exporter named exporter has sent at least sent records and holds none in its
// queue: what this run of the collector will write, it has written.
func waitDrained(t *testing.T, p ports, exporter string, sent int) {
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.Metrics)
	label := fmt.Sprintf("exporter=%q", exporter)
	collectortest.Eventually(t, 30*time.Second, func() error {
		text, err := selfmetrics.Scrape(http.DefaultClient, metrics)
		if err != nil {
			return err
		}
		n, _ := selfmetrics.Sum(text, "otelcol_exporter_sent_log_records", label)
		// The logs' queue: an exporter that also sends metrics has a queue for them, never empty for long.
		q, found := selfmetrics.Sum(text, "otelcol_exporter_queue_size", label+`,data_type="logs"`)
		if int(n) < sent || !found || q > 0 {
			return fmt.Errorf("%s sent %v of %d records, holds %v batches (exposed: %v)", exporter, n, sent, q, found)
		}
		return nil
	})
}

// TestDefaultConfigIsLocal pins what the README promises of the default config.
func TestDefaultConfigIsLocal(t *testing.T) {
	raw, err := os.ReadFile(defaultConfig(t))
	require.NoError(t, err)
	var cfg struct {
		Extensions map[string]map[string]any
		Exporters  map[string]map[string]any
	}
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	assert.Equal(t, "127.0.0.1:13133", cfg.Extensions["health_check"]["endpoint"])
	assert.Equal(t, "./data/queue", cfg.Extensions["file_storage"]["directory"])
	assert.Equal(t, "./"+resultsFile, cfg.Exporters["durable_file"]["path"])
	assert.Equal(t, "file_storage", cfg.Exporters["durable_file"]["sending_queue"].(map[string]any)["storage"])
	assert.Equal(t, "basic", cfg.Exporters["debug"]["verbosity"])
	assert.NotContains(t, string(raw), "0.0.0.0", "the default config listens on loopback only")

	out, err := exec.Command(collectortest.Binary(t), "validate", "--config="+defaultConfig(t)).CombinedOutput()
	require.NoError(t, err, string(out))
}

func TestDefaultPipelineWritesRecordsUnderData(t *testing.T) {
	dir := t.TempDir()
	c, p := start(t, dir, "")
	want := []policyresult.Result{sampleResult("web-1"), sampleResult("web-2")}
	want[1].Outcome, want[1].Severity = policyresult.OutcomePass, policyresult.SeverityNone
	sendOTLP(t, p.HTTP, want...)

	got := waitResults(t, dir, 2)
	assert.Equal(t, want, got, "every attribute survives the default pipeline")
	// Without a kubeconfig the report receiver says why, and the rest of the collector runs on.
	assert.Contains(t, c.Output(), "kubernetes client configuration (auth_type kubeConfig)")
	c.Stop()
	assert.DirExists(t, filepath.Join(dir, "data", "queue"))
	assert.Len(t, readResults(t, dir), 2, "written once")
}

// TestPersistentQueueSurvivesFailingExporterAndRestart: a record accepted while the exporter cannot write stays
// in the file_storage queue, survives a restart, and is written once the exporter can write again.
func TestPersistentQueueSurvivesFailingExporterAndRestart(t *testing.T) {
	dir := t.TempDir()

	// First run: every write fails (ENOSPC), as on a full disk.
	c, p := start(t, dir, "exporters:\n  durable_file:\n    path: /dev/full\n")
	want := sampleResult("api-0")
	sendOTLP(t, p.HTTP, want)
	c.WaitOutput("no space left on device", 30*time.Second)
	assert.Contains(t, c.Output(), "Exporting failed. Will retry the request after interval.")
	c.Stop()
	assert.Empty(t, readResults(t, dir))

	// Second run: the same data directory, the exporter can write.
	c, p = start(t, dir, "")
	got := waitResults(t, dir, 1)
	assert.Equal(t, []policyresult.Result{want}, got)
	// A duplicate delivery, if any, would be written before the exporter reports its queue empty.
	waitDrained(t, p, "durable_file", 1)
	c.Stop()
	assert.Len(t, readResults(t, dir), 1, "delivered exactly once")
}

// TestComponentsListsTheDistribution checks `otelcol-policy components` against the distribution's promise.
func TestComponentsListsTheDistribution(t *testing.T) {
	out, err := exec.Command(collectortest.Binary(t), "components").Output()
	require.NoError(t, err)
	type component struct {
		Name   string `yaml:"name"`
		Scheme string `yaml:"scheme"`
	}
	var comps struct {
		Receivers, Processors, Exporters, Connectors, Extensions, Providers []component
	}
	require.NoError(t, yaml.Unmarshal(out, &comps))
	lists := map[string][]component{"receivers": comps.Receivers, "processors": comps.Processors,
		"exporters": comps.Exporters, "connectors": comps.Connectors, "extensions": comps.Extensions, "providers": comps.Providers}
	names := func(kind string) []string {
		var n []string
		for _, c := range lists[kind] {
			n = append(n, c.Name+c.Scheme)
		}
		return n
	}
	assert.ElementsMatch(t, []string{"otlp", "k8s_reports", "decision_logs"}, names("receivers"))
	assert.ElementsMatch(t, []string{"batch", "memory_limiter", "transform", "filter", "attributes", "resource", "groupbyattrs",
		"k8s_metadata_strip", "policy_aggregate"}, names("processors"))
	assert.ElementsMatch(t, []string{"policy_metrics"}, names("connectors"))
	// Core (since v0.161.0) names the OTLP exporters otlp_grpc and otlp_http; `otlp` and `otlphttp` remain aliases.
	assert.ElementsMatch(t, []string{"otlp_grpc", "otlp_http", "debug", "file", "prometheus_remote_write", "prometheus", "durable_file", "s3", "kafka", "results_grpc"}, names("exporters"))
	assert.ElementsMatch(t, []string{"zpages", "file_storage", "health_check", "pprof", "bearertokenauth", "k8s_leader_elector", "k8s_events"}, names("extensions"))
	assert.ElementsMatch(t, []string{"env", "file", "yaml", "http", "https"}, names("providers"))
	assert.True(t, strings.Contains(string(out), "github.com/otelcol-policy/otelcol-policy"), "this repository's components are built in")
}
