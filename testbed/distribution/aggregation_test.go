// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const metricsFile = "data/policy-metrics.jsonl"

// fastIntervals shortens the aggregation intervals of the default config and keeps decision inputs.
const fastIntervals = `
processors:
  policy_aggregate:
    interval: 500ms
connectors:
  policy_metrics:
    interval: 500ms
receivers:
  decision_logs:
    include_input: true
`

func readSummaries(t *testing.T, dir string) []policyresult.Summary {
	var out []policyresult.Summary
	eachRecord(t, dir, func(_ pcommon.Resource, lr plog.LogRecord) {
		if lr.EventName() == policyresult.EventSummary {
			s, err := policyresult.ReadSummaryLogRecord(lr)
			require.NoError(t, err)
			out = append(out, s)
		}
	})
	return out
}

// lastMetrics returns, per metric name and sorted attributes, the last value the file exporter wrote.
func lastMetrics(t *testing.T, dir string) map[string]int64 {
	out := map[string]int64{}
	for line := range collectortest.CompleteLines(t, filepath.Join(dir, metricsFile)) {
		md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(line)
		require.NoError(t, err)
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					var dps pmetric.NumberDataPointSlice
					if m.Type() == pmetric.MetricTypeGauge {
						dps = m.Gauge().DataPoints()
					} else {
						dps = m.Sum().DataPoints()
					}
					for _, dp := range dps.All() {
						out[fmt.Sprintf("%s%v", m.Name(), dp.Attributes().AsRaw())] = dp.IntValue()
					}
				}
			}
		}
	}
	return out
}

// TestDefaultConfigSummarisesStripsAndCounts: the default pipeline strips server metadata from decision inputs,
// writes policy.summary records next to the results, and the policy.results / policy.decisions metrics to
// ./data/policy-metrics.jsonl.
func TestDefaultConfigSummarisesStripsAndCounts(t *testing.T) {
	dir := t.TempDir()
	c, p := start(t, dir, fastIntervals)
	defer c.Stop()

	pass := sampleResult("web-3")
	pass.Outcome = policyresult.OutcomePass
	sendOTLP(t, p.HTTP, sampleResult("web-1"), sampleResult("web-2"), pass)

	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"req-1","operation":"CREATE",` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop","uid":"0b7f7c1e",` +
		`"resourceVersion":"4711","generation":1,"creationTimestamp":"2026-11-22T08:00:00Z",` +
		`"managedFields":[{"manager":"kubectl","operation":"Apply"}],"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx"}]}}}}`
	body := `[{"decision_id":"opa-1","path":"kubernetes/admission","input":` + review + `,"result":false,"timestamp":"2026-11-22T08:00:01Z"}]`
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/logs", p.OPA), "application/json", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var summaries []policyresult.Summary
	collectortest.Eventually(t, 30*time.Second, func() error {
		if summaries = readSummaries(t, dir); len(summaries) == 0 {
			return fmt.Errorf("no summary in %s yet", resultsFile)
		}
		return nil
	})
	require.Len(t, summaries, 1)
	s := summaries[0]
	assert.Equal(t, policyresult.Counts{Pass: 1, Fail: 2, Total: 3}, s.Counts)
	assert.Equal(t, s.Counts, s.Change)
	assert.Equal(t, []policyresult.Attribute{
		{Name: policyresult.AttrSource, Value: "kyverno"},
		{Name: policyresult.AttrPolicy, Value: "disallow-privileged"},
		{Name: policyresult.AttrResourceNamespace, Value: "shop"},
	}, s.Attributes)

	var object map[string]any
	eachRecord(t, dir, func(_ pcommon.Resource, lr plog.LogRecord) {
		if lr.EventName() == policyresult.EventDecision {
			object = lr.Body().Map().AsRaw()["input"].(map[string]any)["request"].(map[string]any)["object"].(map[string]any)
		}
	})
	require.NotNil(t, object, "the decision is written with its input")
	assert.Equal(t, map[string]any{"name": "web-1", "namespace": "shop", "labels": map[string]any{"app": "web"}}, object["metadata"])

	collectortest.Eventually(t, 30*time.Second, func() error {
		m := lastMetrics(t, dir)
		want := map[string]int64{
			"policy.results" + fmt.Sprint(map[string]any{"policy.name": "disallow-privileged", "policy.result": "fail", "policy.source": "kyverno"}):         2,
			"policy.results" + fmt.Sprint(map[string]any{"policy.name": "disallow-privileged", "policy.result": "pass", "policy.source": "kyverno"}):         1,
			"policy.decisions" + fmt.Sprint(map[string]any{"policy.decision.action": "deny", "policy.name": "kubernetes/admission", "policy.source": "opa"}): 1,
		}
		for k, v := range want {
			if got, ok := m[k]; !ok || got != v {
				return fmt.Errorf("%s = %d (present %v), want %d; have %v", k, got, ok, v, m)
			}
		}
		return nil
	})
}
