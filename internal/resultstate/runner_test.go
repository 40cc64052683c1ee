// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

var testID = component.MustNewID("policy_test")

// runnerHarness runs a Runner whose interval the test drives and whose emissions it sees.
type runnerHarness struct {
	t         *testing.T
	r         *Runner
	telemetry *componenttest.Telemetry
	logs      *observer.ObservedLogs
	tick      chan time.Time
	// emitted receives the changed counts of every emission the Runner asks for, sent or not.
	emitted chan map[string]policyresult.Counts
	// refuse, when set, is the next consumer's answer.
	refuse error
	// diverted are the records divert took.
	diverted int
}

func newRunnerHarness(t *testing.T, names []string, maxKeys int, storageID *component.ID, host component.Host) *runnerHarness {
	t.Helper()
	return newRunnerHarnessWith(t, names, maxKeys, storageID, host, nil)
}

// newRunnerHarnessWith is newRunnerHarness with the settings changed by with, if not nil.
func newRunnerHarnessWith(t *testing.T, names []string, maxKeys int, storageID *component.ID, host component.Host, with func(*Settings)) *runnerHarness {
	t.Helper()
	h := &runnerHarness{
		t: t, telemetry: componenttest.NewTelemetry(),
		tick: make(chan time.Time), emitted: make(chan map[string]policyresult.Counts, 16),
	}
	core, logs := observer.New(zap.InfoLevel)
	h.logs = logs
	meter := h.telemetry.NewTelemetrySettings().MeterProvider.Meter("resultstate")
	tel := Telemetry{}
	var err error
	tel.Errors, err = meter.Int64Counter("errors")
	require.NoError(t, err)
	tel.Evictions, err = meter.Int64Counter("evictions")
	require.NoError(t, err)
	tel.Keys, err = meter.Int64UpDownCounter("keys")
	require.NoError(t, err)
	tel.Groups, err = meter.Int64UpDownCounter("groups")
	require.NoError(t, err)

	set := Settings{
		ID: testID, Kind: component.KindProcessor, Logger: zap.New(core),
		Interval: time.Hour, Storage: storageID, GroupByKey: "group_by",
		InvalidRecord: "A result record cannot be counted", Telemetry: tel,
	}
	if with != nil {
		with(&set)
	}
	h.r = NewRunner(New(names, maxKeys), h.emit, set)
	h.r.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
		assert.Equal(t, time.Hour, d)
		return h.tick, func() {}
	}
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, h.r.Start(context.Background(), host))
	return h
}

// emit reports the groups that changed, as policy_aggregate does.
func (h *runnerHarness) emit(_ context.Context, t *Tally) ([]*Group, error) {
	var groups []*Group
	changes := map[string]policyresult.Counts{}
	t.Changed(func(g *Group) {
		groups = append(groups, g)
		changes[g.Values[1]] = g.Counts
	})
	h.emitted <- changes
	if len(groups) == 0 {
		return nil, ErrNothingDue
	}
	if h.refuse != nil {
		return nil, h.refuse
	}
	return groups, nil
}

func (h *runnerHarness) count(items ...any) error {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "prod")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for _, it := range items {
		switch v := it.(type) {
		case policyresult.Result:
			policyresult.WriteLogRecord(&v, lrs.AppendEmpty())
		case policyresult.Decision:
			policyresult.WriteDecisionLogRecord(&v, lrs.AppendEmpty())
		case plog.LogRecord:
			v.CopyTo(lrs.AppendEmpty())
		}
	}
	return h.r.Count(context.Background(), ld, func(_ pcommon.Map, lr plog.LogRecord) bool {
		if lr.EventName() != policyresult.EventDecision {
			return false
		}
		h.diverted++
		return true
	})
}

// sum reads a counter of the Runner: the total, or by reason for errors.
func (h *runnerHarness) sum(name string) map[string]int64 {
	h.t.Helper()
	m, err := h.telemetry.GetMetric(name)
	require.NoError(h.t, err)
	out := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		reason, _ := dp.Attributes.Value("reason")
		out[reason.AsString()] += dp.Value
	}
	return out
}

func res(policy, name string, o policyresult.Outcome) policyresult.Result {
	return policyresult.Result{
		Cluster: "prod", Source: "kyverno", Policy: policy, Rule: "check", Outcome: o, State: policyresult.StateNew,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name, UID: "uid-" + name},
	}
}

func TestRunnerCountsAndReportsTheState(t *testing.T) {
	h := newRunnerHarness(t, names, 2, nil, nil)
	defer func() { require.NoError(t, h.r.Shutdown(context.Background())) }()
	invalid := plog.NewLogRecord()
	r := res("p", "bad", policyresult.OutcomeFail)
	policyresult.WriteLogRecord(&r, invalid)
	invalid.Attributes().PutStr(policyresult.AttrResultKey, "not-a-key")
	allowed := true
	require.NoError(t, h.count(
		res("p", "a", policyresult.OutcomeFail),
		res("q", "b", policyresult.OutcomePass),
		policyresult.Decision{ID: "d1", Source: "opa", Policy: "admission", Allowed: &allowed},
		invalid, invalid,
		res("q", "c", policyresult.OutcomePass), // the third key evicts one
	))
	assert.Equal(t, 1, h.diverted, "the decision went to divert and was not counted")
	assert.Equal(t, map[string]int64{"": 2}, h.sum("keys"))
	assert.Equal(t, map[string]int64{"": 1}, h.sum("evictions"))
	assert.Equal(t, map[string]int64{"invalid_record": 2}, h.sum("errors"))
	assert.Equal(t, 1, h.logs.FilterMessage("A result record cannot be counted").Len(), "one warning per batch")
	groups := h.sum("groups")[""]
	assert.Equal(t, int64(h.r.tally.Groups()), groups)
}

func TestRunnerEmitsOnEveryTick(t *testing.T) {
	h := newRunnerHarness(t, names, 100, nil, nil)
	defer func() { require.NoError(t, h.r.Shutdown(context.Background())) }()
	require.NoError(t, h.count(res("p", "a", policyresult.OutcomeFail), res("p", "b", policyresult.OutcomePass)))
	h.tick <- time.Now()
	assert.Equal(t, map[string]policyresult.Counts{"p": {Pass: 1, Fail: 1, Total: 2}}, <-h.emitted)

	// The loop takes the second tick only once the first emission returned, so what it reports comes after
	// the groups were marked emitted.
	h.tick <- time.Now()
	assert.Empty(t, <-h.emitted, "nothing changed since the accepted emission")

	require.NoError(t, h.count(res("p", "a", policyresult.OutcomePass)))
	h.tick <- time.Now()
	assert.Equal(t, map[string]policyresult.Counts{"p": {Pass: 2, Total: 2}}, <-h.emitted)
}

func TestRunnerKeepsARefusedEmissionDue(t *testing.T) {
	h := newRunnerHarness(t, names, 100, nil, nil)
	defer func() { require.NoError(t, h.r.Shutdown(context.Background())) }()
	require.NoError(t, h.count(res("p", "a", policyresult.OutcomeFail)))
	h.refuse = errors.New("queue is full")
	assert.ErrorIs(t, h.r.Flush(context.Background()), h.refuse)
	assert.Equal(t, map[string]policyresult.Counts{"p": {Fail: 1, Total: 1}}, <-h.emitted)
	assert.Equal(t, map[string]int64{"consume": 1}, h.sum("errors"))

	h.refuse = nil
	require.NoError(t, h.r.Flush(context.Background()))
	assert.Equal(t, map[string]policyresult.Counts{"p": {Fail: 1, Total: 1}}, <-h.emitted, "still due")
	require.NoError(t, h.r.Flush(context.Background()))
	assert.Empty(t, <-h.emitted)
}

// storedHarness starts a file_storage extension on dir and a harness that keeps its state there.
func storedHarness(t *testing.T, dir string, names []string) (*runnerHarness, filestoragetest.Host) {
	t.Helper()
	id := filestoragetest.ID
	host := filestoragetest.NewHost(t, dir)
	return newRunnerHarness(t, names, 100, &id, host), host
}

func TestRunnerShutdownEmitsOnceAndSaves(t *testing.T) {
	dir := t.TempDir()
	h, host := storedHarness(t, dir, names)
	require.NoError(t, h.count(res("p", "a", policyresult.OutcomeFail), res("q", "b", policyresult.OutcomeWarn)))
	require.NoError(t, h.r.Shutdown(context.Background()))
	require.Len(t, h.emitted, 1, "shutdown emits once")
	assert.Equal(t, map[string]policyresult.Counts{"p": {Fail: 1, Total: 1}, "q": {Warn: 1, Total: 1}}, <-h.emitted)
	require.NoError(t, h.r.Shutdown(context.Background()), "a second shutdown does nothing")
	assert.Empty(t, h.emitted)
	require.NoError(t, host.Ext.Shutdown(context.Background()))

	// The next start finds the counts and that they were emitted.
	h, host = storedHarness(t, dir, names)
	assert.Equal(t, 1, h.logs.FilterMessage("Loaded the stored state").Len())
	assert.Equal(t, map[string]int64{"": 2}, h.sum("keys"))
	assert.Equal(t, map[string]int64{"": 2}, h.sum("groups"))
	require.NoError(t, h.r.Flush(context.Background()))
	assert.Empty(t, <-h.emitted, "the shutdown emission was stored as emitted")
	require.NoError(t, h.r.Shutdown(context.Background()))
	require.NoError(t, host.Ext.Shutdown(context.Background()))
}

func TestRunnerHaltKeepsOnlyWhatWasStored(t *testing.T) {
	dir := t.TempDir()
	h, host := storedHarness(t, dir, names)
	require.NoError(t, h.count(res("p", "a", policyresult.OutcomeFail)))
	require.NoError(t, h.r.Halt(context.Background()))
	assert.Empty(t, h.emitted, "a crash emits nothing")
	// The client is closed: a batch now cannot be written, is refused and counted.
	require.ErrorContains(t, h.count(res("p", "b", policyresult.OutcomeFail)), "policy_test: storing the state")
	assert.Equal(t, map[string]int64{"storage": 1}, h.sum("errors"))
	require.NoError(t, host.Ext.Shutdown(context.Background()))

	h, host = storedHarness(t, dir, names)
	defer func() { require.NoError(t, host.Ext.Shutdown(context.Background())) }()
	defer func() { require.NoError(t, h.r.Shutdown(context.Background())) }()
	require.NoError(t, h.r.Flush(context.Background()))
	assert.Equal(t, map[string]policyresult.Counts{"p": {Fail: 1, Total: 1}}, <-h.emitted,
		"the batch written before the crash is due; the refused one is not there")
}

func TestRunnerStartsAfreshWhenRegrouped(t *testing.T) {
	dir := t.TempDir()
	h, host := storedHarness(t, dir, names)
	require.NoError(t, h.count(res("p", "a", policyresult.OutcomeFail)))
	require.NoError(t, h.r.Shutdown(context.Background()))
	require.NoError(t, host.Ext.Shutdown(context.Background()))

	h, host = storedHarness(t, dir, []string{policyresult.AttrSource, policyresult.AttrResourceNamespace})
	defer func() { require.NoError(t, host.Ext.Shutdown(context.Background())) }()
	defer func() { require.NoError(t, h.r.Shutdown(context.Background())) }()
	warnings := h.logs.FilterMessageSnippet("group_by changed since the state was stored").All()
	require.Len(t, warnings, 1)
	assert.Zero(t, h.r.tally.Len())
}

func TestRunnerStartFailsWithoutItsStorage(t *testing.T) {
	id := component.MustNewIDWithName("file_storage", "missing")
	r := NewRunner(New(names, 100), func(context.Context, *Tally) ([]*Group, error) { return nil, ErrNothingDue },
		Settings{ID: component.MustNewID("policy_test"), Kind: component.KindProcessor, Logger: zap.NewNop(), Storage: &id, Interval: time.Hour})
	host := filestoragetest.NewHost(t, t.TempDir())
	defer func() { require.NoError(t, host.Ext.Shutdown(context.Background())) }()
	err := r.Start(context.Background(), host)
	require.ErrorContains(t, err, "file_storage/missing")
	require.NoError(t, r.Shutdown(context.Background()), "a runner that did not start shuts down")
}
