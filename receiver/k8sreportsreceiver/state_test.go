// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

func res(policy, name string, o policyresult.Outcome, msg string) parse.Result {
	return parse.Result{Result: policyresult.Result{
		Cluster: "c1", Source: "kyverno", Policy: policy, Outcome: o, Message: msg,
		Resource: policyresult.Resource{Kind: "Pod", Namespace: "shop", Name: name},
		Report:   policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "r"},
	}, Body: parse.WholeBody([]byte(`{"policy":"` + policy + `"}`))}
}

func states(recs []outRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.State)+" "+r.Policy+" "+r.Resource.Name+" "+string(r.Outcome))
	}
	return out
}

func emittedOf(results []parse.Result) *emittedReport {
	_, state := diff(nil, results, false, false, true, "c1")
	return state
}

func TestDiff(t *testing.T) {
	a := res("p1", "a", policyresult.OutcomeFail, "bad")
	b := res("p2", "b", policyresult.OutcomePass, "")
	c := res("p3", "c", policyresult.OutcomeWarn, "hmm")

	recs, stored := diff(nil, []parse.Result{a, b}, false, false, true, "c1")
	assert.Equal(t, []string{"new p1 a fail", "new p2 b pass"}, states(recs))
	assert.Equal(t, `{"policy":"p1"}`, string(recs[0].Body.Bytes()))
	assert.Len(t, stored.results, 2)
	prev := stored

	// Unchanged results emit nothing.
	recs, _ = diff(prev, []parse.Result{a, b}, false, false, true, "c1")
	assert.Empty(t, recs)

	// A new message is a change too: the result ID covers it.
	a2 := res("p1", "a", policyresult.OutcomeFail, "worse")
	b2 := res("p2", "b", policyresult.OutcomeFail, "")
	recs, stored = diff(prev, []parse.Result{a2, b2, c}, false, false, true, "c1")
	assert.Equal(t, []string{"changed p1 a fail", "changed p2 b fail", "new p3 c warn"}, states(recs))

	// A result that disappears is resolved with its last outcome and its original key.
	prev = stored
	recs, _ = diff(prev, []parse.Result{a2, c}, false, false, true, "c1")
	assert.Equal(t, []string{"resolved p2 b fail"}, states(recs))
	assert.Equal(t, b2.Key(), recs[0].Key())
	assert.True(t, recs[0].Body.IsZero())

	// Without emit_resolved nothing is said, but the state still forgets the result.
	recs, stored = diff(prev, []parse.Result{a2, c}, false, false, false, "c1")
	assert.Empty(t, recs)
	assert.Len(t, stored.results, 2)

	// A partial report (Gatekeeper's capped violations) resolves nothing it does not list, and keeps it.
	recs, stored = diff(prev, []parse.Result{c}, false, true, true, "c1")
	assert.Empty(t, recs)
	assert.Len(t, stored.results, 3)

	// A deleted report resolves everything.
	recs, stored = diff(prev, nil, true, false, true, "c1")
	assert.Equal(t, []string{"resolved p1 a fail", "resolved p2 b fail", "resolved p3 c warn"}, states(recs))
	assert.Nil(t, stored)
}

func TestStoredResultKeepsIdentity(t *testing.T) {
	scored := false
	r := res("p1", "a", policyresult.OutcomeFail, "bad")
	r.Scored, r.Severity, r.Category, r.Rule, r.Resource.UID = &scored, policyresult.SeverityLow, "cat", "rule", "uid-1"
	st := emittedOf([]parse.Result{r})
	back := st.result(0, "c1")
	assert.Equal(t, r.Key(), back.Key())
	r.Message = ""
	assert.Equal(t, r.Result, back, "everything but the message survives")
}

func TestTrackerKeepsOnlyTheLatestVersionInArrivalOrder(t *testing.T) {
	tr := newTracker(10, 1000, nil)
	ctx := context.Background()
	k1, k2 := objKey{policyReportGVR, "shop", "r1"}, objKey{policyReportGVR, "shop", "r2"}
	require.NoError(t, tr.put(ctx, k1, &update{rv: "1"}))
	require.NoError(t, tr.put(ctx, k2, &update{rv: "2"}))
	require.NoError(t, tr.put(ctx, k1, &update{rv: "3"}))

	k, u, prev, ok := tr.take(false, settled)
	require.True(t, ok)
	assert.Equal(t, k1, k)
	assert.Equal(t, "3", u.rv, "only the latest version waits")
	assert.Nil(t, prev)
	k, _, _, ok = tr.take(false, settled)
	require.True(t, ok)
	assert.Equal(t, k2, k)
	_, _, _, ok = tr.take(false, settled)
	assert.False(t, ok)

	// A report is removed only if downstream knows it or it waits.
	tr.remove(objKey{policyReportGVR, "shop", "unknown"}, "policy_reports")
	_, _, _, ok = tr.take(false, settled)
	assert.False(t, ok)

	tr.commit(k1, &emittedReport{UID: "u1"})
	tr.commit(k2, &emittedReport{UID: "u2"})
	other := objKey{openReportGVR, "shop", "o1"}
	tr.commit(other, &emittedReport{UID: "o"})
	tr.listed(policyReportGVR, "policy_reports", map[objKey]struct{}{k2: {}})
	k, u, prev, ok = tr.take(false, settled)
	require.True(t, ok)
	assert.Equal(t, k1, k, "a report missing from a complete list is deleted")
	assert.True(t, u.deleted)
	assert.Equal(t, "u1", prev.UID)
	_, _, _, ok = tr.take(false, settled)
	assert.False(t, ok, "other resources are untouched by a list")

	tr.removeGVR(openReportGVR, "open_reports")
	k, u, _, ok = tr.take(false, settled)
	require.True(t, ok)
	assert.Equal(t, other, k)
	assert.True(t, u.deleted)
}

func TestTrackerPushesBackWhenFull(t *testing.T) {
	tr := newTracker(1, 1000, nil)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, tr.put(ctx, objKey{name: "a"}, &update{}))
	// The same report may always be replaced...
	require.NoError(t, tr.put(ctx, objKey{name: "a"}, &update{rv: "2"}))
	// ...but another one waits until the emitter takes one.
	done := make(chan error)
	go func() { done <- tr.put(ctx, objKey{name: "b"}, &update{}) }()
	select {
	case err := <-done:
		t.Fatalf("put did not wait for room (it returned %v)", err)
	default:
	}
	_, _, _, ok := tr.take(true, settled)
	require.True(t, ok)
	require.NoError(t, <-done)
	cancel()
	tr.close()
}

func TestStateStoreRoundTrip(t *testing.T) {
	ext := filestoragetest.Start(t, t.TempDir())
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindReceiver, component.MustNewID("k8s_reports"), "")
	require.NoError(t, err)
	defer client.Close(context.Background())

	s := &stateStore{client: client}
	loaded, err := s.load(context.Background())
	require.NoError(t, err)
	assert.Empty(t, loaded)

	k1, k2 := objKey{policyReportGVR, "shop", "r1"}, objKey{clusterPolicyReportGVR, "", "cis"}
	r1 := emittedOf([]parse.Result{res("p1", "a", policyresult.OutcomeFail, "x")})
	r1.UID, r1.ResourceVersion = "u1", "10"
	r2 := emittedOf([]parse.Result{res("p2", "b", policyresult.OutcomePass, "")})
	require.NoError(t, s.save(context.Background(), map[objKey]*emittedReport{k1: r1, k2: r2}))
	require.NoError(t, s.save(context.Background(), map[objKey]*emittedReport{k2: nil}))

	s2 := &stateStore{client: client}
	loaded, err = s2.load(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[objKey]*emittedReport{k1: r1}, loaded)
}
