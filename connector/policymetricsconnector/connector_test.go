// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func result(cluster, policy, ns, name string, o policyresult.Outcome, st policyresult.State) policyresult.Result {
	return policyresult.Result{
		Cluster: cluster, Source: "kyverno", Policy: policy, Rule: "check", Outcome: o, State: st,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: "uid-" + name},
	}
}

func decision(cluster, policy string, allowed bool, action policyresult.Action) policyresult.Decision {
	return policyresult.Decision{Cluster: cluster, ID: policy, Kind: policyresult.DecisionKindAdmission,
		Source: "gatekeeper", Policy: policy, Allowed: &allowed, Action: action}
}

// batch builds records the way the receivers do: one resource per cluster.
func batch(items ...any) plog.Logs {
	ld := plog.NewLogs()
	byCluster := map[string]plog.LogRecordSlice{}
	records := func(cluster string) plog.LogRecordSlice {
		lrs, ok := byCluster[cluster]
		if !ok {
			rl := ld.ResourceLogs().AppendEmpty()
			policyresult.WriteResource(rl.Resource(), cluster)
			lrs = rl.ScopeLogs().AppendEmpty().LogRecords()
			byCluster[cluster] = lrs
		}
		return lrs
	}
	for _, it := range items {
		switch v := it.(type) {
		case policyresult.Result:
			policyresult.WriteLogRecord(&v, records(v.Cluster).AppendEmpty())
		case policyresult.Decision:
			policyresult.WriteDecisionLogRecord(&v, records(v.Cluster).AppendEmpty())
		}
	}
	return ld
}

// series renders every data point as one line: resource attributes, metric, sorted attributes, value.
func series(t *testing.T, md pmetric.Metrics) []string {
	t.Helper()
	var out []string
	for _, rm := range md.ResourceMetrics().All() {
		res := attrString(rm.Resource().Attributes())
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					require.True(t, m.Sum().IsMonotonic())
					require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
					dps = m.Sum().DataPoints()
				default:
					t.Fatalf("unexpected metric type %s", m.Type())
				}
				for _, dp := range dps.All() {
					require.NotZero(t, dp.Timestamp())
					if m.Type() == pmetric.MetricTypeSum {
						require.NotZero(t, dp.StartTimestamp())
					}
					out = append(out, fmt.Sprintf("%s %s{%s} %d", res, m.Name(), attrString(dp.Attributes()), dp.IntValue()))
				}
			}
		}
	}
	return out
}

func attrString(m pcommon.Map) string {
	var parts []string
	for k, v := range m.All() {
		parts = append(parts, k+"="+v.AsString())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

type harness struct {
	t         *testing.T
	c         *policyMetrics
	sink      *consumertest.MetricsSink
	telemetry *componenttest.Telemetry
}

func newHarness(t *testing.T, cfg *Config, host component.Host) *harness {
	t.Helper()
	h := &harness{t: t, sink: &consumertest.MetricsSink{}, telemetry: componenttest.NewTelemetry()}
	var err error
	h.c, err = newConnector(cfg, metadatatest.NewSettings(h.telemetry), h.sink)
	require.NoError(t, err)
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, h.c.Start(context.Background(), host))
	return h
}

func (h *harness) consume(items ...any) {
	h.t.Helper()
	require.NoError(h.t, h.c.ConsumeLogs(context.Background(), batch(items...)))
}

// tick emits and returns what was emitted.
func (h *harness) tick() []string {
	h.t.Helper()
	before := len(h.sink.AllMetrics())
	require.NoError(h.t, h.c.state.Flush(context.Background()))
	var out []string
	for _, md := range h.sink.AllMetrics()[before:] {
		out = append(out, series(h.t, md)...)
	}
	return out
}

func (h *harness) shutdown() {
	require.NoError(h.t, h.c.Shutdown(context.Background()))
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Interval = time.Hour
	return cfg
}

// outcomes renders the five gauge points of one label set.
func outcomes(res, labels string, pass, fail, warn, errs, skip int) []string {
	var out []string
	for i, o := range policyresult.Outcomes {
		parts := []string{policyresult.AttrResult + "=" + string(o)}
		if labels != "" {
			parts = append(parts, strings.Split(labels, ",")...)
		}
		slices.Sort(parts)
		out = append(out, fmt.Sprintf("%s policy.results{%s} %d", res, strings.Join(parts, ","), []int{pass, fail, warn, errs, skip}[i]))
	}
	return out
}

func concat(parts ...[]string) []string { return slices.Concat(parts...) }

func TestResultGaugesFollowTheState(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	defer h.shutdown()
	h.consume(
		result("eu", "require-labels", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "require-labels", "pay", "b", policyresult.OutcomePass, policyresult.StateNew),
		result("us", "require-labels", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "disallow-latest", "shop", "a", policyresult.OutcomeWarn, policyresult.StateNew),
	)
	// Default labels: source and policy; clusters and namespaces are summed.
	assert.Equal(t, concat(
		outcomes("", "policy.name=disallow-latest,policy.source=kyverno", 0, 0, 1, 0, 0),
		outcomes("", "policy.name=require-labels,policy.source=kyverno", 1, 2, 0, 0, 0),
	), h.tick())

	h.consume(
		result("eu", "require-labels", "shop", "a", policyresult.OutcomePass, policyresult.StateChanged),
		result("eu", "disallow-latest", "shop", "a", policyresult.OutcomeWarn, policyresult.StateResolved),
	)
	assert.Equal(t, concat(
		outcomes("", "policy.name=disallow-latest,policy.source=kyverno", 0, 0, 0, 0, 0),
		outcomes("", "policy.name=require-labels,policy.source=kyverno", 2, 1, 0, 0, 0),
	), h.tick(), "an emptied series reports zero once")
	assert.Equal(t, outcomes("", "policy.name=require-labels,policy.source=kyverno", 2, 1, 0, 0, 0), h.tick(),
		"gauges are re-sent every interval; the emptied one is gone")
}

func TestLabelsChooseTheCardinality(t *testing.T) {
	items := []any{
		result("eu", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "p", "shop", "b", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "p", "pay", "a", policyresult.OutcomePass, policyresult.StateNew),
		result("us", "p", "shop", "a", policyresult.OutcomeSkip, policyresult.StateNew),
		result("us", "q", "", "node-1", policyresult.OutcomeError, policyresult.StateNew),
	}
	for _, tt := range []struct {
		labels []string
		want   []string
	}{
		{labels: nil, want: outcomes("", "", 1, 2, 0, 1, 1)},
		{labels: []string{policyresult.AttrPolicy}, want: concat(
			outcomes("", "policy.name=p", 1, 2, 0, 0, 1),
			outcomes("", "policy.name=q", 0, 0, 0, 1, 0),
		)},
		{labels: []string{policyresult.AttrClusterName, policyresult.AttrPolicy, policyresult.AttrResourceNamespace}, want: concat(
			outcomes("k8s.cluster.name=eu", "policy.name=p,policy.resource.namespace=pay", 1, 0, 0, 0, 0),
			outcomes("k8s.cluster.name=eu", "policy.name=p,policy.resource.namespace=shop", 0, 2, 0, 0, 0),
			outcomes("k8s.cluster.name=us", "policy.name=p,policy.resource.namespace=shop", 0, 0, 0, 0, 1),
			outcomes("k8s.cluster.name=us", "policy.name=q", 0, 0, 0, 1, 0),
		)},
	} {
		t.Run(strings.Join(tt.labels, "+"), func(t *testing.T) {
			cfg := testConfig()
			cfg.Results.Labels = tt.labels
			h := newHarness(t, cfg, nil)
			defer h.shutdown()
			h.consume(items...)
			got := h.tick()
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			assert.Equal(t, want, got)
		})
	}
}

func TestDecisionSums(t *testing.T) {
	cfg := testConfig()
	cfg.Decisions.MaxSeries = 2
	h := newHarness(t, cfg, nil)
	defer h.shutdown()
	h.consume(
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny),
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny),
		decision("us", "K8sRequiredLabels", false, policyresult.ActionDeny),
		decision("eu", "K8sAllowedRepos", false, policyresult.ActionWarn),
		decision("eu", "K8sBlockNodePort", false, policyresult.ActionDeny), // third series: overflow
	)
	h.consume(decision("eu", "K8sAllowedRepos", true, policyresult.ActionWarn))
	assert.Equal(t, []string{
		" policy.decisions{policy.decision.action=deny,policy.name=K8sRequiredLabels,policy.source=gatekeeper} 3",
		" policy.decisions{policy.decision.action=warn,policy.name=K8sAllowedRepos,policy.source=gatekeeper} 2",
		" policy.decisions{otel.metric.overflow=true} 1",
	}, h.tick())
	assert.Len(t, h.tick(), 3, "cumulative sums are re-sent every interval")
}

func TestInvalidRecordsAreCountedAndSkipped(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	defer h.shutdown()
	ld := batch(result("eu", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "p", "shop", "b", policyresult.OutcomeFail, policyresult.StateNew))
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(0).Attributes().PutStr(policyresult.AttrResultKey, "short")
	lrs.AppendEmpty().Body().SetStr("not a policy record")
	require.NoError(t, h.c.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, outcomes("", "policy.name=p,policy.source=kyverno", 0, 1, 0, 0, 0), h.tick())
	metadatatest.AssertEqualConnectorPolicyMetricsErrors(t, h.telemetry, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "invalid_record"))},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorPolicyMetricsKeys(t, h.telemetry, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}

// startStored runs the connector with its state in a file_storage on dir; stop shuts both down, as a restart
// does.
func startStored(t *testing.T, cfg *Config, dir string) (h *harness, stop func()) {
	t.Helper()
	host := filestoragetest.NewHost(t, dir)
	h = newHarness(t, cfg, host)
	return h, func() {
		h.shutdown()
		require.NoError(t, host.Ext.Shutdown(context.Background()))
	}
}

func storedConfig() *Config {
	cfg := testConfig()
	cfg.Storage = &storageID
	return cfg
}

func TestRestartWithStorageKeepsTheCounts(t *testing.T) {
	dir := t.TempDir()
	h, stop := startStored(t, storedConfig(), dir)
	h.consume(
		result("eu", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "p", "shop", "b", policyresult.OutcomePass, policyresult.StateNew),
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny),
	)
	before := h.tick()
	started := decisionStarts(h.sink.AllMetrics()...)
	stop()
	denied := " policy.decisions{policy.decision.action=deny,policy.name=K8sRequiredLabels,policy.source=gatekeeper} "
	assert.Equal(t, concat(outcomes("", "policy.name=p,policy.source=kyverno", 1, 1, 0, 0, 0), []string{denied + "1"}), before)

	// After the restart the receiver sends only what changed; the gauges still count everything, and the
	// decision sum continues from its value and start time.
	h, stop = startStored(t, storedConfig(), dir)
	defer stop()
	assert.Equal(t, before, h.tick())
	h.consume(result("eu", "p", "shop", "c", policyresult.OutcomeFail, policyresult.StateNew),
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny))
	assert.Equal(t, concat(outcomes("", "policy.name=p,policy.source=kyverno", 1, 2, 0, 0, 0), []string{denied + "2"}), h.tick())
	assert.Equal(t, started, decisionStarts(h.sink.AllMetrics()...))
}

// decisionStarts are the distinct start times of the decision sums in mds.
func decisionStarts(mds ...pmetric.Metrics) []pcommon.Timestamp {
	var out []pcommon.Timestamp
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Type() != pmetric.MetricTypeSum {
						continue
					}
					for _, dp := range m.Sum().DataPoints().All() {
						if !slices.Contains(out, dp.StartTimestamp()) {
							out = append(out, dp.StartTimestamp())
						}
					}
				}
			}
		}
	}
	return out
}

func TestEmitsOnInterval(t *testing.T) {
	cfg := testConfig()
	cfg.Interval = 20 * time.Millisecond
	sink := &consumertest.MetricsSink{}
	c, err := NewFactory().CreateLogsToMetrics(context.Background(), metadatatest.NewSettings(componenttest.NewTelemetry()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.ConsumeLogs(context.Background(), batch(result("eu", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew))))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Shutdown(context.Background()))
	assert.Equal(t, outcomes("", "policy.name=p,policy.source=kyverno", 0, 1, 0, 0, 0), series(t, sink.AllMetrics()[0]))
}

func TestDecisionSumsStartAgainWhenRelabelled(t *testing.T) {
	dir := t.TempDir()
	h, stop := startStored(t, storedConfig(), dir)
	h.consume(decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny))
	stop()

	cfg := storedConfig()
	cfg.Decisions.Labels = []string{policyresult.AttrPolicy}
	h, stop = startStored(t, cfg, dir)
	defer stop()
	assert.Empty(t, h.tick(), "the sums of the other labels are gone")
	h.consume(decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny))
	assert.Equal(t, []string{" policy.decisions{policy.name=K8sRequiredLabels} 1"}, h.tick())
}
