// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadatatest"
)

// result is one Kyverno-shaped result of policy on pod name in namespace ns of cluster.
func result(cluster, policy, ns, name string, o policyresult.Outcome, st policyresult.State) policyresult.Result {
	return policyresult.Result{
		Cluster: cluster, Source: "kyverno", Policy: policy, Rule: "check", Outcome: o, State: st,
		Severity: policyresult.SeverityMedium,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: "uid-" + name},
		Report:   policyresult.Report{Kind: "PolicyReport", Namespace: ns, Name: "uid-" + name},
	}
}

// logs builds one batch the way the receivers do: one resource per cluster.
func logs(results ...policyresult.Result) plog.Logs {
	ld := plog.NewLogs()
	byCluster := map[string]plog.LogRecordSlice{}
	for i := range results {
		lrs, ok := byCluster[results[i].Cluster]
		if !ok {
			rl := ld.ResourceLogs().AppendEmpty()
			policyresult.WriteResource(rl.Resource(), results[i].Cluster)
			lrs = rl.ScopeLogs().AppendEmpty().LogRecords()
			byCluster[results[i].Cluster] = lrs
		}
		policyresult.WriteLogRecord(&results[i], lrs.AppendEmpty())
	}
	return ld
}

// summary is what a test compares of a summary record.
type summary struct {
	Cluster string
	Group   []policyresult.Attribute
	Counts  policyresult.Counts
	Change  policyresult.Counts
}

func summariesOf(t *testing.T, lds ...plog.Logs) []summary {
	t.Helper()
	var out []summary
	for _, ld := range lds {
		for _, rl := range ld.ResourceLogs().All() {
			cluster := ""
			if v, ok := rl.Resource().Attributes().Get(policyresult.AttrClusterName); ok {
				cluster = v.Str()
			}
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if lr.EventName() != policyresult.EventSummary {
						continue
					}
					s, err := policyresult.ReadSummaryLogRecord(lr)
					require.NoError(t, err)
					all := s.Attributes
					if cluster != "" {
						all = append([]policyresult.Attribute{{Name: policyresult.AttrClusterName, Value: cluster}}, all...)
					}
					require.Equal(t, policyresult.SummaryKey(all), s.Key)
					out = append(out, summary{Cluster: cluster, Group: s.Attributes, Counts: s.Counts, Change: s.Change})
				}
			}
		}
	}
	return out
}

func group(policy, ns string) []policyresult.Attribute {
	return []policyresult.Attribute{
		{Name: policyresult.AttrSource, Value: "kyverno"},
		{Name: policyresult.AttrPolicy, Value: policy},
		{Name: policyresult.AttrResourceNamespace, Value: ns},
	}
}

type harness struct {
	t         *testing.T
	lp        processor.Logs
	agg       *aggregator
	next      *consumertest.LogsSink
	telemetry *componenttest.Telemetry
}

func newHarness(t *testing.T, cfg *Config, next consumer.Logs, host component.Host) *harness {
	t.Helper()
	h := &harness{t: t, telemetry: componenttest.NewTelemetry()}
	if next == nil {
		h.next = &consumertest.LogsSink{}
		next = h.next
	}
	var err error
	h.lp, h.agg, err = newLogsProcessor(context.Background(), metadatatest.NewSettings(h.telemetry), cfg, next)
	require.NoError(t, err)
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, h.lp.Start(context.Background(), host))
	return h
}

func (h *harness) consume(results ...policyresult.Result) {
	h.t.Helper()
	require.NoError(h.t, h.lp.ConsumeLogs(context.Background(), logs(results...)))
}

// tick emits the summaries due and returns them.
func (h *harness) tick() []summary {
	h.t.Helper()
	before := len(h.next.AllLogs())
	require.NoError(h.t, h.agg.state.Flush(context.Background()))
	return summariesOf(h.t, h.next.AllLogs()[before:]...)
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Interval = time.Hour
	return cfg
}

func TestCreateChangeResolve(t *testing.T) {
	h := newHarness(t, testConfig(), nil, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()
	const c = "prod"
	h.consume(
		result(c, "require-labels", "shop", "cart", policyresult.OutcomeFail, policyresult.StateNew),
		result(c, "require-labels", "shop", "web", policyresult.OutcomePass, policyresult.StateNew),
		result(c, "require-labels", "pay", "api", policyresult.OutcomePass, policyresult.StateNew),
		result(c, "disallow-latest", "shop", "cart", policyresult.OutcomeWarn, policyresult.StateNew),
	)
	assert.Equal(t, 4, h.next.LogRecordCount(), "results are forwarded by default")
	assert.Equal(t, []summary{
		{c, group("disallow-latest", "shop"), policyresult.Counts{Warn: 1, Total: 1}, policyresult.Counts{Warn: 1, Total: 1}},
		{c, group("require-labels", "pay"), policyresult.Counts{Pass: 1, Total: 1}, policyresult.Counts{Pass: 1, Total: 1}},
		{c, group("require-labels", "shop"), policyresult.Counts{Pass: 1, Fail: 1, Total: 2}, policyresult.Counts{Pass: 1, Fail: 1, Total: 2}},
	}, h.tick())
	assert.Empty(t, h.tick(), "nothing changed")

	// The failing pod is fixed, a new one fails, and a pass is re-sent unchanged.
	h.consume(
		result(c, "require-labels", "shop", "cart", policyresult.OutcomePass, policyresult.StateChanged),
		result(c, "require-labels", "shop", "db", policyresult.OutcomeError, policyresult.StateNew),
		result(c, "require-labels", "pay", "api", policyresult.OutcomePass, policyresult.StateNew),
	)
	assert.Equal(t, []summary{
		{c, group("require-labels", "shop"), policyresult.Counts{Pass: 2, Error: 1, Total: 3}, policyresult.Counts{Pass: 1, Fail: -1, Error: 1, Total: 1}},
	}, h.tick())

	// Resolving removes results; an emptied group reports zero once and is then forgotten.
	h.consume(
		result(c, "disallow-latest", "shop", "cart", policyresult.OutcomeWarn, policyresult.StateResolved),
		result(c, "require-labels", "shop", "db", policyresult.OutcomeError, policyresult.StateResolved),
		result(c, "require-labels", "shop", "never-seen", policyresult.OutcomeFail, policyresult.StateResolved),
	)
	assert.Equal(t, []summary{
		{c, group("disallow-latest", "shop"), policyresult.Counts{}, policyresult.Counts{Warn: -1, Total: -1}},
		{c, group("require-labels", "shop"), policyresult.Counts{Pass: 2, Total: 2}, policyresult.Counts{Error: -1, Total: -1}},
	}, h.tick())
	assert.Empty(t, h.tick())
	assert.Equal(t, 2, h.agg.tally.Groups())

	// A flap within one interval is no change.
	h.consume(result(c, "require-labels", "pay", "api", policyresult.OutcomeFail, policyresult.StateChanged))
	h.consume(result(c, "require-labels", "pay", "api", policyresult.OutcomePass, policyresult.StateChanged))
	assert.Empty(t, h.tick())

	metadatatest.AssertEqualProcessorPolicyAggregateKeys(t, h.telemetry, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorPolicyAggregateGroups(t, h.telemetry, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorPolicyAggregateSummaries(t, h.telemetry, []metricdata.DataPoint[int64]{{Value: 6}}, metricdatatest.IgnoreTimestamp())
}

func TestClustersAreSeparateResources(t *testing.T) {
	h := newHarness(t, testConfig(), nil, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()
	h.consume(
		result("eu", "require-labels", "shop", "cart", policyresult.OutcomeFail, policyresult.StateNew),
		result("us", "require-labels", "shop", "cart", policyresult.OutcomePass, policyresult.StateNew),
		result("eu", "require-labels", "pay", "api", policyresult.OutcomeFail, policyresult.StateNew),
	)
	require.NoError(t, h.agg.state.Flush(context.Background()))
	ld := h.next.AllLogs()[1]
	require.Equal(t, 2, ld.ResourceLogs().Len(), "one resource per cluster")
	assert.Equal(t, map[string]any{policyresult.AttrClusterName: "eu"}, ld.ResourceLogs().At(0).Resource().Attributes().AsRaw())
	assert.Equal(t, 2, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().Len())
	assert.Equal(t, []summary{
		{"eu", group("require-labels", "pay"), policyresult.Counts{Fail: 1, Total: 1}, policyresult.Counts{Fail: 1, Total: 1}},
		{"eu", group("require-labels", "shop"), policyresult.Counts{Fail: 1, Total: 1}, policyresult.Counts{Fail: 1, Total: 1}},
		{"us", group("require-labels", "shop"), policyresult.Counts{Pass: 1, Total: 1}, policyresult.Counts{Pass: 1, Total: 1}},
	}, summariesOf(t, ld))
}

func TestGroupByChosenAttributes(t *testing.T) {
	cfg := testConfig()
	cfg.GroupBy = []string{policyresult.AttrSeverity}
	h := newHarness(t, cfg, nil, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()
	high := result("prod", "p1", "shop", "cart", policyresult.OutcomeFail, policyresult.StateNew)
	high.Severity = policyresult.SeverityHigh
	h.consume(high,
		result("prod", "p2", "shop", "cart", policyresult.OutcomeFail, policyresult.StateNew),
		result("prod", "p3", "pay", "api", policyresult.OutcomePass, policyresult.StateNew))
	sev := func(s string) []policyresult.Attribute {
		return []policyresult.Attribute{{Name: policyresult.AttrSeverity, Value: s}}
	}
	assert.Equal(t, []summary{
		{"", sev("high"), policyresult.Counts{Fail: 1, Total: 1}, policyresult.Counts{Fail: 1, Total: 1}},
		{"", sev("medium"), policyresult.Counts{Pass: 1, Fail: 1, Total: 2}, policyresult.Counts{Pass: 1, Fail: 1, Total: 2}},
	}, h.tick())

	// A result whose severity changes moves to the other group.
	high.Severity = policyresult.SeverityMedium
	h.consume(high)
	assert.Equal(t, []summary{
		{"", sev("high"), policyresult.Counts{}, policyresult.Counts{Fail: -1, Total: -1}},
		{"", sev("medium"), policyresult.Counts{Pass: 1, Fail: 2, Total: 3}, policyresult.Counts{Fail: 1, Total: 1}},
	}, h.tick())
}

func TestResultsDrop(t *testing.T) {
	cfg := testConfig()
	cfg.Results = ResultsDrop
	h := newHarness(t, cfg, nil, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()

	h.consume(result("prod", "p", "shop", "cart", policyresult.OutcomeFail, policyresult.StateNew))
	assert.Empty(t, h.next.AllLogs(), "a batch of results only is not passed on at all")

	// Decisions and records that cannot be counted continue.
	ld := logs(result("prod", "p", "shop", "web", policyresult.OutcomePass, policyresult.StateNew))
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	policyresult.WriteDecisionLogRecord(&policyresult.Decision{ID: "d1", Source: "opa", Policy: "kubernetes/admission"}, lrs.AppendEmpty())
	bad := lrs.AppendEmpty()
	r := result("prod", "p", "shop", "db", policyresult.OutcomePass, policyresult.StateNew)
	policyresult.WriteLogRecord(&r, bad)
	bad.Attributes().PutStr(policyresult.AttrResultKey, "not-a-key")
	require.NoError(t, h.lp.ConsumeLogs(context.Background(), ld))
	require.Len(t, h.next.AllLogs(), 1)
	got := h.next.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Equal(t, 2, got.Len())
	assert.Equal(t, policyresult.EventDecision, got.At(0).EventName())
	assert.Equal(t, "not-a-key", got.At(1).Attributes().AsRaw()[policyresult.AttrResultKey])

	assert.Equal(t, []summary{
		{"prod", group("p", "shop"), policyresult.Counts{Pass: 1, Fail: 1, Total: 2}, policyresult.Counts{Pass: 1, Fail: 1, Total: 2}},
	}, h.tick())
	metadatatest.AssertEqualProcessorPolicyAggregateErrors(t, h.telemetry, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "invalid_record"))},
	}, metricdatatest.IgnoreTimestamp())
}

func TestUnknownOutcomeIsCountedAsInvalid(t *testing.T) {
	h := newHarness(t, testConfig(), nil, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()
	ld := logs(result("prod", "p", "shop", "cart", policyresult.OutcomeFail, policyresult.StateNew),
		result("prod", "p", "shop", "web", "", policyresult.StateNew))
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutStr(policyresult.AttrResult, "MANUAL")
	require.NoError(t, h.lp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, []summary{
		{"prod", group("p", "shop"), policyresult.Counts{Total: 1}, policyresult.Counts{Total: 1}},
	}, h.tick(), "a result without outcome counts towards the total; one outside the vocabulary is not counted")
	metadatatest.AssertEqualProcessorPolicyAggregateErrors(t, h.telemetry, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "invalid_record"))},
	}, metricdatatest.IgnoreTimestamp())
}

func TestMaxKeysEvicts(t *testing.T) {
	cfg := testConfig()
	cfg.MaxKeys = 3
	h := newHarness(t, cfg, nil, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		h.consume(result("prod", "p", "shop", name, policyresult.OutcomeFail, policyresult.StateNew))
	}
	assert.Equal(t, []summary{
		{"prod", group("p", "shop"), policyresult.Counts{Fail: 3, Total: 3}, policyresult.Counts{Fail: 3, Total: 3}},
	}, h.tick())
	metadatatest.AssertEqualProcessorPolicyAggregateEvictions(t, h.telemetry, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorPolicyAggregateKeys(t, h.telemetry, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
}

// refusing refuses every batch while refuse is set.
type refusing struct {
	consumertest.LogsSink
	refuse bool
}

func (r *refusing) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if r.refuse {
		return errors.New("queue is full")
	}
	return r.LogsSink.ConsumeLogs(ctx, ld)
}

func TestRefusedSummaryIsRetriedWithLaterCounts(t *testing.T) {
	next := &refusing{}
	h := newHarness(t, testConfig(), next, nil)
	defer func() { require.NoError(t, h.lp.Shutdown(context.Background())) }()
	h.consume(result("prod", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew))
	require.NoError(t, h.agg.state.Flush(context.Background()))

	h.consume(result("prod", "p", "shop", "b", policyresult.OutcomeFail, policyresult.StateNew))
	next.refuse = true
	assert.Error(t, h.agg.state.Flush(context.Background()))
	next.refuse = false
	h.consume(result("prod", "p", "shop", "c", policyresult.OutcomePass, policyresult.StateNew))
	require.NoError(t, h.agg.state.Flush(context.Background()))

	all := summariesOf(t, next.AllLogs()...)
	assert.Equal(t, []summary{
		{"prod", group("p", "shop"), policyresult.Counts{Fail: 1, Total: 1}, policyresult.Counts{Fail: 1, Total: 1}},
		{"prod", group("p", "shop"), policyresult.Counts{Pass: 1, Fail: 2, Total: 3}, policyresult.Counts{Pass: 1, Fail: 1, Total: 2}},
	}, all)
	metadatatest.AssertEqualProcessorPolicyAggregateErrors(t, h.telemetry, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "consume"))},
	}, metricdatatest.IgnoreTimestamp())
}

func TestSummariesOnInterval(t *testing.T) {
	cfg := testConfig()
	cfg.Interval = 20 * time.Millisecond
	sink := &consumertest.LogsSink{}
	lp, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(componenttest.NewTelemetry()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, lp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, lp.ConsumeLogs(context.Background(), logs(result("prod", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew))))
	require.Eventually(t, func() bool { return len(sink.AllLogs()) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, lp.ConsumeLogs(context.Background(), logs(result("prod", "p", "shop", "a", policyresult.OutcomePass, policyresult.StateChanged))))
	require.NoError(t, lp.Shutdown(context.Background()), "shutdown emits what is due")
	assert.Equal(t, []summary{
		{"prod", group("p", "shop"), policyresult.Counts{Fail: 1, Total: 1}, policyresult.Counts{Fail: 1, Total: 1}},
		{"prod", group("p", "shop"), policyresult.Counts{Pass: 1, Total: 1}, policyresult.Counts{Pass: 1, Fail: -1}},
	}, summariesOf(t, sink.AllLogs()...))
}

var storageID = filestoragetest.ID

// uninterrupted is what one replica with storage summarises when each step is followed by an interval.
func uninterrupted(t *testing.T, steps [][]policyresult.Result) []summary {
	t.Helper()
	cfg := testConfig()
	cfg.Storage = &storageID
	host := filestoragetest.NewHost(t, t.TempDir())
	h := newHarness(t, cfg, nil, host)
	var out []summary
	for _, step := range steps {
		h.consume(step...)
		out = append(out, h.tick()...)
	}
	require.NoError(t, h.lp.Shutdown(context.Background()))
	require.NoError(t, host.Ext.Shutdown(context.Background()))
	return out
}

// TestRestartWithStorage runs one sequence twice: without a restart, and with a graceful restart and a crash in
// the middle. The summaries must be the same.
func TestRestartWithStorage(t *testing.T) {
	const c = "prod"
	steps := [][]policyresult.Result{
		{
			result(c, "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
			result(c, "p", "shop", "b", policyresult.OutcomePass, policyresult.StateNew),
			result(c, "q", "shop", "a", policyresult.OutcomeWarn, policyresult.StateNew),
		},
		{
			result(c, "p", "shop", "a", policyresult.OutcomePass, policyresult.StateChanged),
			result(c, "q", "shop", "a", policyresult.OutcomeWarn, policyresult.StateResolved),
		},
		{
			result(c, "p", "shop", "c", policyresult.OutcomeSkip, policyresult.StateNew),
		},
	}
	cfg := testConfig()
	cfg.Storage = &storageID
	want := uninterrupted(t, steps)
	require.Len(t, want, 5)

	dir := t.TempDir()
	var got []summary
	// Graceful restart after the first step.
	host := filestoragetest.NewHost(t, dir)
	h := newHarness(t, cfg, nil, host)
	h.consume(steps[0]...)
	got = append(got, h.tick()...)
	require.NoError(t, h.lp.Shutdown(context.Background()))
	require.NoError(t, host.Ext.Shutdown(context.Background()))

	// A crash after the second step was accepted but before its summary: the collector is gone without a
	// shutdown, and only what is in storage survives.
	host = filestoragetest.NewHost(t, dir)
	h = newHarness(t, cfg, nil, host)
	assert.Empty(t, h.tick(), "the restored state has nothing new to report")
	h.consume(steps[1]...)
	require.NoError(t, h.agg.state.Halt(context.Background()))
	require.NoError(t, host.Ext.Shutdown(context.Background()))

	host = filestoragetest.NewHost(t, dir)
	h = newHarness(t, cfg, nil, host)
	got = append(got, h.tick()...)
	h.consume(steps[2]...)
	got = append(got, h.tick()...)
	require.NoError(t, h.lp.Shutdown(context.Background()))
	require.NoError(t, host.Ext.Shutdown(context.Background()))

	assert.Equal(t, want, got)
}
