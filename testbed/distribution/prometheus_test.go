// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
)

// prometheusOverlay sends policy_metrics to Prometheus as docs/prometheus.md does, with the cluster as a label
// of both metrics and allowed/denied (policy.result) on decisions, and serves the self-metrics on metricsPort.
func prometheusOverlay(remoteWriteURL string, metricsPort int) string {
	return fmt.Sprintf(`
connectors:
  policy_metrics:
    interval: 500ms
    results:
      labels: [k8s.cluster.name, policy.source, policy.name]
    decisions:
      labels: [k8s.cluster.name, policy.source, policy.name, policy.result, policy.decision.action]
exporters:
  prometheus_remote_write:
    http:
      endpoint: %s
    resource_constant_labels:
      included: [k8s.cluster.name]
    translation_strategy: UnderscoreEscapingWithSuffixes
service:
  pipelines:
    metrics:
      exporters: [file/metrics, prometheus_remote_write]
  telemetry:
%s`, remoteWriteURL, collectortest.MetricsTelemetry(metricsPort))
}

// promValues evaluates each query and fails with all differences at once, so that Eventually reports them.
func promValues(prom *promtest.Server, want map[string]float64) error {
	var diffs []string
	for q, v := range want {
		got, err := prom.Value(q)
		if err != nil {
			diffs = append(diffs, err.Error())
		} else if got != v {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", q, got, v))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("%d of %d queries differ: %v", len(diffs), len(want), diffs)
	}
	return nil
}

// TestPolicyMetricsInPrometheus: results and decisions sent to the real binary arrive in a real Prometheus
// through the prometheus_remote_write exporter with the names and labels docs/prometheus.md promises and the
// exact values, follow a changed outcome, and Prometheus scrapes the collector's own metrics next to them.
func TestPolicyMetricsInPrometheus(t *testing.T) {
	metricsPort := collectortest.FreePort(t)
	prom := promtest.Start(t, promtest.Options{
		Targets: []promtest.Target{{Job: "otelcol-policy", Address: fmt.Sprintf("127.0.0.1:%d", metricsPort)}},
	})
	dir := t.TempDir()
	c, p := start(t, dir, prometheusOverlay(prom.RemoteWriteURL(), metricsPort))
	defer c.Stop()

	pass := sampleResult("web-3")
	pass.Outcome = policyresult.OutcomePass
	sendOTLP(t, p.HTTP, sampleResult("web-1"), sampleResult("web-2"), pass)
	body := `[{"decision_id":"opa-1","path":"kubernetes/admission","input":{"user":"bob"},"result":false,"timestamp":"2026-11-22T08:00:01Z"},
{"decision_id":"opa-2","path":"kubernetes/admission","input":{"user":"eve"},"result":false,"timestamp":"2026-11-22T08:00:02Z"},
{"decision_id":"opa-3","path":"kubernetes/admission","input":{"user":"alice"},"result":true,"timestamp":"2026-11-22T08:00:03Z"}]`
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/logs", p.OPA), "application/json", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	results := func(outcome string) string {
		return `policy_results{k8s_cluster_name="laptop",policy_source="kyverno",policy_name="disallow-privileged",policy_result="` + outcome + `"}`
	}
	want := map[string]float64{
		results("fail"): 2, results("pass"): 1, results("warn"): 0, results("error"): 0, results("skip"): 0,
		`policy_decisions_total{k8s_cluster_name="local",policy_source="opa",policy_name="kubernetes/admission",policy_result="fail",policy_decision_action="deny"}`: 2,
		`policy_decisions_total{k8s_cluster_name="local",policy_source="opa",policy_name="kubernetes/admission",policy_result="pass",policy_decision_action=""}`:     1,
	}
	collectortest.Eventually(t, 60*time.Second, func() error { return promValues(prom, want) })

	// The names and every label, pinned: what dashboards and alerts are written against.
	names, err := prom.Query(`count by (__name__) ({__name__=~"policy_.+"})`)
	require.NoError(t, err)
	var got []string
	for _, s := range names {
		got = append(got, s.Labels["__name__"])
	}
	assert.ElementsMatch(t, []string{"policy_results", "policy_decisions_total"}, got)
	series, err := prom.Query(results("fail"))
	require.NoError(t, err)
	require.Len(t, series, 1)
	assert.Equal(t, map[string]string{
		"__name__": "policy_results", "k8s_cluster_name": "laptop", "policy_source": "kyverno",
		"policy_name": "disallow-privileged", "policy_result": "fail",
		"otel_scope_name": "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector",
	}, series[0].Labels)

	// A result that passes now: the gauges follow at the next interval.
	fixed := sampleResult("web-1")
	fixed.Outcome, fixed.State = policyresult.OutcomePass, policyresult.StateChanged
	sendOTLP(t, p.HTTP, fixed)
	want[results("fail")], want[results("pass")] = 1, 2
	collectortest.Eventually(t, 60*time.Second, func() error { return promValues(prom, want) })

	// The collector's own metrics, scraped by the same Prometheus: the exporter's sends and its queue, what the
	// receivers took in. At v0.165.0, as at v0.161.0, the collector exports its counters without the _total suffix.
	collectortest.Eventually(t, 60*time.Second, func() error {
		sent, err := prom.Value(`sum(otelcol_exporter_sent_metric_points{job="otelcol-policy",exporter="prometheus_remote_write"})`)
		if err != nil {
			return err
		}
		if sent < 7 {
			return fmt.Errorf("otelcol_exporter_sent_metric_points = %v, want at least the 7 points of one emission", sent)
		}
		return promValues(prom, map[string]float64{
			`otelcol_exporter_queue_capacity{job="otelcol-policy",exporter="prometheus_remote_write"}`:    10000,
			`count(otelcol_exporter_queue_size{job="otelcol-policy",exporter="prometheus_remote_write"})`: 1,
			`sum(otelcol_exporter_send_failed_metric_points{job="otelcol-policy"}) or vector(0)`:          0,
			`count(otelcol_exporter_queue_size{job="otelcol-policy",exporter="durable_file"})`:            1,
			`sum(otelcol_receiver_accepted_log_records{job="otelcol-policy",receiver="otlp"})`:            4,
			`sum(otelcol_receiver_accepted_log_records{job="otelcol-policy",receiver="decision_logs"})`:   3,
		})
	})
}
