// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// fixtureResults are the results whose emitted state testdata/state/v1-report.json holds, as the first
// version of the stored state wrote it (its keys and IDs computed outside Go, from the hash specification).
func fixtureResults() []parse.Result {
	scored, unscored := true, false
	report := policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "r1"}
	cart := policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-1", UID: "uid-cart-1"}
	return []parse.Result{
		{Result: policyresult.Result{Cluster: "c1", Source: "kyverno", Policy: "require-labels", Rule: "check-team",
			Category: "Best Practices", Severity: policyresult.SeverityMedium, Scored: &scored,
			Outcome: policyresult.OutcomeFail, Message: "label team is required", Resource: cart, Report: report}},
		{Result: policyresult.Result{Cluster: "c1", Source: "kyverno", Policy: "require-labels", Rule: "check-app",
			Outcome: policyresult.OutcomePass, Resource: cart, Report: report}},
		{Result: policyresult.Result{Cluster: "c1", Source: "kyverno", Policy: "disallow-latest",
			Severity: policyresult.SeverityLow, Scored: &unscored, Outcome: policyresult.OutcomeWarn, Message: "no tag",
			Resource: policyresult.Resource{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "cart"},
			Report:   report}},
		{Result: policyresult.Result{Cluster: "c1", Source: "kube-bench", Policy: "1.1.1",
			Outcome: policyresult.OutcomeError, Report: report}},
	}
}

// TestStoredStateOfFirstVersionLoads stores the entries the first version of the receiver wrote, under its
// storage keys, and checks that they load as the same state the receiver builds now: the same results are
// unchanged (nothing is emitted again after an upgrade), and a deleted report resolves them under their keys.
func TestStoredStateOfFirstVersionLoads(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "state", "v1-report.json"))
	require.NoError(t, err)
	ext := filestoragetest.Start(t, t.TempDir())
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindReceiver, component.MustNewID("k8s_reports"), "")
	require.NoError(t, err)
	defer client.Close(context.Background())
	const entry = "k8s_reports/v1/report/wgpolicyk8s.io/v1alpha2/policyreports/shop/r1"
	require.NoError(t, client.Batch(context.Background(),
		storage.SetOperation("k8s_reports/v1/index", []byte(`["`+entry+`"]`)),
		storage.SetOperation(entry, raw)))

	loaded, err := (&stateStore{client: client}).load(context.Background())
	require.NoError(t, err)
	k := objKey{schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}, "shop", "r1"}
	require.Contains(t, loaded, k)
	prev := loaded[k]
	assert.Equal(t, "uid-r1", prev.UID)
	assert.Equal(t, "4711", prev.ResourceVersion)

	_, now := diff(nil, fixtureResults(), false, false, true, "c1")
	now.UID, now.ResourceVersion = prev.UID, prev.ResourceVersion
	assert.Equal(t, now, prev, "the stored state is the state built now")

	recs, _ := diff(prev, fixtureResults(), false, false, true, "c1")
	assert.Empty(t, recs, "results emitted before the upgrade are not emitted again")

	recs, _ = diff(prev, nil, true, false, true, "c1")
	require.Len(t, recs, 4)
	for i, r := range recs {
		want := fixtureResults()[i]
		assert.Equal(t, policyresult.StateResolved, r.State)
		assert.Equal(t, want.Key(), r.Key(), "result %d is resolved under its stored key", i)
	}

	// Written again, the state is the same text.
	again, err := prev.MarshalJSON()
	require.NoError(t, err)
	assert.JSONEq(t, string(raw), string(again))
}

// secondVersionFixture is the state testdata/state/v2-entries.txt holds: the report of the first version's
// fixture, and a cluster-scoped report whose first version was refused as too large.
func secondVersionFixture() map[objKey]*emittedReport {
	_, r1 := diff(nil, fixtureResults(), false, false, true, "c1")
	r1.UID, r1.ResourceVersion = "uid-r1", "4711"
	return map[objKey]*emittedReport{
		{schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}, "shop", "r1"}:     r1,
		{schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}, "", "cis"}: (*emittedReport)(nil).refusing("12", parse.Size{Records: 70_000, Bytes: 3 << 20}),
	}
}

// TestStoredStateOfSecondVersionIsPinned pins the entries the second version of the stored state writes
// (testdata/state/v2-entries.txt: each key, and its value in hexadecimal) and checks that they load as the state
// built now: a change of the format fails here, and needs a version of its own that reads this one (-update
// rewrites the file).
func TestStoredStateOfSecondVersionIsPinned(t *testing.T) {
	ctx := context.Background()
	client, s := emptyStore(t)
	require.NoError(t, s.save(ctx, secondVersionFixture()))
	var got strings.Builder
	for _, key := range []string{storeMetaKey, identityKey(0), slotKey(0), slotKey(1)} {
		fmt.Fprintf(&got, "%s %x\n", key, stored(t, client, key))
	}
	path := filepath.Join("testdata", "state", "v2-entries.txt")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(got.String()), 0o600))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got.String(), "the entries written are not those of the second version")

	pinned, stopPinned := openStateStorage(t, t.TempDir())
	defer stopPinned()
	for line := range strings.Lines(string(want)) {
		key, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		require.True(t, ok, line)
		raw, err := hex.DecodeString(value)
		require.NoError(t, err)
		require.NoError(t, pinned.Set(ctx, key, raw))
	}
	loaded := loadedState(t, pinned)
	assert.Equal(t, secondVersionFixture(), loaded, "the stored state is the state built now")
	for k, prev := range loaded {
		if prev.refused == nil {
			recs, _ := diff(prev, fixtureResults(), false, false, true, "c1")
			assert.Empty(t, recs, "%s: results stored are not emitted again", k)
		}
	}
}

// TestRecordsCarryTheirHashes checks that the key and ID computed while diffing are the ones the records are
// written with, for new, changed and resolved results: the result is not hashed again on its way out.
func TestRecordsCarryTheirHashes(t *testing.T) {
	rcv := &reportsReceiver{cfg: createDefaultConfig().(*Config)}
	rcv.cfg.ClusterName = "c1"
	first := fixtureResults()
	newRecs, prev := diff(nil, first, false, false, true, "c1")
	next := fixtureResults()[:3]
	next[0].Outcome = policyresult.OutcomePass
	changedRecs, _ := diff(prev, next, false, false, true, "c1")
	require.Len(t, changedRecs, 2, "one changed, one resolved")
	assert.Equal(t, policyresult.StateChanged, changedRecs[0].State)
	assert.Equal(t, policyresult.StateResolved, changedRecs[1].State)

	recs := append(newRecs, changedRecs...)
	for i, rec := range recs {
		assert.Equal(t, rec.Hashes(), rec.hashes, "record %d (%s)", i, rec.State)
	}
	ld := rcv.toLogs(&batch{parts: []batchPart{{item: &batchItem{records: recs}, to: len(recs)}}, n: len(recs)})
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Equal(t, len(recs), lrs.Len())
	for i, rec := range recs {
		got, err := policyresult.ReadLogRecord(ld.ResourceLogs().At(0).Resource(), lrs.At(i))
		require.NoError(t, err)
		key, _ := lrs.At(i).Attributes().Get(policyresult.AttrResultKey)
		id, _ := lrs.At(i).Attributes().Get(policyresult.AttrResultID)
		assert.Equal(t, rec.Key(), key.Str(), "record %d", i)
		assert.Equal(t, rec.ID(), id.Str(), "record %d", i)
		assert.Equal(t, rec.Key(), got.Key())
	}
}

// MarshalJSON writes the first version's form of an emittedReport (storage_v1.go), as that version did; the
// receiver only reads it now.
func (e *emittedReport) MarshalJSON() ([]byte, error) {
	w := wireReport{UID: e.UID, ResourceVersion: e.ResourceVersion,
		Report: wireRef{Kind: e.report.Kind, Namespace: e.report.Namespace, Name: e.report.Name}}
	if e.refused != nil {
		w.Refused = &wireRefusal{ResourceVersion: e.refused.resourceVersion, Records: e.refused.size.Records, Bytes: e.refused.size.Bytes}
	}
	w.Subjects = make([]wireRef, 0, len(e.subjects))
	w.Results = make([]wireStoredResult, 0, len(e.results))
	for _, s := range e.subjects {
		w.Subjects = append(w.Subjects, wireRef{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, UID: s.UID})
	}
	for _, r := range e.results {
		id := r.identity.Value()
		w.Results = append(w.Results, wireStoredResult{
			Key: r.hashes.Key, ID: r.hashes.ID,
			Source: id.Source, Policy: id.Policy, Rule: id.Rule, Category: id.Category, Severity: string(id.Severity),
			Scored: id.Scored, Outcome: string(r.outcome.outcome()), Subject: r.subject,
		})
	}
	return json.Marshal(w)
}
