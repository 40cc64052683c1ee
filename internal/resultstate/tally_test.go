// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

var names = []string{policyresult.AttrSource, policyresult.AttrPolicy}

func key(i int) policyresult.Hash {
	s := sha256.Sum256(fmt.Appendf(nil, "result %d", i))
	var k policyresult.Hash
	copy(k[:], s[:])
	return k
}

func counts(t *Tally) map[string]policyresult.Counts {
	out := map[string]policyresult.Counts{}
	t.All(func(g *Group) { out[g.Values[0]+"/"+g.Values[1]] = g.Counts })
	return out
}

func changed(t *Tally) []string {
	var out []string
	t.Changed(func(g *Group) { out = append(out, g.Values[1]) })
	return out
}

func TestCreateChangeResolve(t *testing.T) {
	tl := New(names, 100)
	kyverno := []string{"kyverno", "require-labels"}
	tl.Set(key(1), kyverno, policyresult.OutcomeFail)
	tl.Set(key(2), kyverno, policyresult.OutcomePass)
	tl.Set(key(3), kyverno, "")
	tl.Set(key(4), []string{"kyverno", "disallow-latest"}, policyresult.OutcomeWarn)
	assert.Equal(t, map[string]policyresult.Counts{
		"kyverno/require-labels":  {Pass: 1, Fail: 1, Total: 3},
		"kyverno/disallow-latest": {Warn: 1, Total: 1},
	}, counts(tl))
	assert.ElementsMatch(t, []string{"require-labels", "disallow-latest"}, changed(tl))
	tl.All(tl.MarkEmitted)
	assert.Empty(t, changed(tl))

	// The same outcome again changes nothing; a new outcome moves one count.
	tl.Set(key(2), kyverno, policyresult.OutcomePass)
	assert.Empty(t, changed(tl))
	tl.Set(key(1), kyverno, policyresult.OutcomePass)
	assert.Equal(t, policyresult.Counts{Pass: 2, Total: 3}, counts(tl)["kyverno/require-labels"])
	assert.Equal(t, []string{"require-labels"}, changed(tl))

	// Flapping back before a summary leaves nothing to report.
	tl.Set(key(1), kyverno, policyresult.OutcomeFail)
	assert.Empty(t, changed(tl))

	// Resolving the last key empties the group; it is forgotten once its empty summary was emitted.
	tl.Resolve(key(4))
	tl.Resolve(key(4))
	assert.Equal(t, policyresult.Counts{}, counts(tl)["kyverno/disallow-latest"])
	assert.Equal(t, []string{"disallow-latest"}, changed(tl))
	tl.All(tl.MarkEmitted)
	assert.Len(t, counts(tl), 1)
	assert.Equal(t, 3, tl.Len())
}

func TestKeyMovesBetweenGroups(t *testing.T) {
	tl := New(names, 100)
	for i := range 5 {
		tl.Set(key(i), []string{"trivy", "high"}, policyresult.OutcomeFail)
	}
	tl.Set(key(2), []string{"trivy", "critical"}, policyresult.OutcomeFail)
	assert.Equal(t, map[string]policyresult.Counts{
		"trivy/high": {Fail: 4, Total: 4}, "trivy/critical": {Fail: 1, Total: 1},
	}, counts(tl))
	// Every key still resolves from wherever it is, after the swap-removal reordered the group.
	for i := range 5 {
		tl.Resolve(key(i))
	}
	assert.Equal(t, 0, tl.Len())
	assert.Empty(t, counts(tl), "groups no summary ever mentioned are forgotten as soon as they are empty")
}

func TestEvictsLeastRecentlyUpdated(t *testing.T) {
	// With no more keys than an eviction samples, the approximation is exact, so the victims are known.
	tl := New(names, evictSample)
	g := []string{"kyverno", "p"}
	for i := range evictSample {
		tl.Set(key(i), g, policyresult.OutcomePass)
	}
	tl.Set(key(0), g, policyresult.OutcomeFail)
	tl.Set(key(1), g, policyresult.OutcomeFail)
	evicted := 0
	for i := 10; i < 13; i++ {
		evicted += tl.Set(key(i), g, policyresult.OutcomeWarn)
	}
	assert.Equal(t, 3, evicted)
	assert.Equal(t, int64(3), tl.Evictions())
	assert.Equal(t, map[string]policyresult.Counts{"kyverno/p": {Fail: 2, Warn: 3, Total: 5}}, counts(tl))
	for _, i := range []int{0, 1, 10, 11, 12} {
		_, ok := tl.keys[key(i)]
		assert.True(t, ok, "key %d", i)
	}
}

func TestEvictingAGroupsLastKeyBeforeJoiningIt(t *testing.T) {
	tl := New(names, 1)
	g := []string{"kyverno", "p"}
	tl.Set(key(1), g, policyresult.OutcomePass)
	tl.All(tl.MarkEmitted)
	tl.Resolve(key(1))
	tl.All(tl.MarkEmitted)
	tl.Set(key(2), g, policyresult.OutcomePass)
	assert.Equal(t, 1, tl.Set(key(3), g, policyresult.OutcomeFail))
	assert.Equal(t, map[string]policyresult.Counts{"kyverno/p": {Fail: 1, Total: 1}}, counts(tl))
}

func TestReadRecord(t *testing.T) {
	r := policyresult.Result{Cluster: "eu", Source: "kyverno", Policy: "p", Outcome: policyresult.OutcomeFail,
		Resource: policyresult.Resource{Kind: "Pod", Name: "a"}}
	res := pcommon.NewMap()
	res.PutStr(policyresult.AttrClusterName, r.Cluster)
	lr := plog.NewLogRecord()
	policyresult.WriteLogRecord(&r, lr)
	lr.SetEventName("") // after a transform that kept only the attribute
	got, ok, err := ReadRecord(res, lr)
	require.NoError(t, err)
	require.True(t, ok)
	want := r.Hashes().Key
	assert.Equal(t, Record{Key: want, Outcome: policyresult.OutcomeFail}, got)

	lr.Attributes().PutStr(policyresult.AttrResultState, string(policyresult.StateResolved))
	got, _, _ = ReadRecord(res, lr)
	assert.True(t, got.Resolved)

	lr.Attributes().PutStr(policyresult.AttrResultState, string(policyresult.StateChanged))
	lr.Attributes().PutStr(policyresult.AttrResult, "MANUAL")
	_, ok, err = ReadRecord(res, lr)
	assert.True(t, ok)
	assert.ErrorContains(t, err, `unknown policy result "MANUAL"`)

	lr.Attributes().PutStr(policyresult.AttrEventName, policyresult.EventDecision)
	_, ok, err = ReadRecord(res, lr)
	assert.False(t, ok)
	assert.NoError(t, err)
}

// TestReadRecordWithoutKey: a result sent as plain OTLP without its hashes is counted under the key the
// receivers would have written (policyresult.RecordKey); one that names no policy is refused.
func TestReadRecordWithoutKey(t *testing.T) {
	r := policyresult.Result{Cluster: "laptop", Policy: "require-labels", Outcome: policyresult.OutcomeFail}
	res := pcommon.NewMap()
	res.PutStr(policyresult.AttrClusterName, r.Cluster)
	lr := plog.NewLogRecord()
	lr.SetEventName(policyresult.EventResult)
	lr.Attributes().PutStr(policyresult.AttrPolicy, r.Policy)
	lr.Attributes().PutStr(policyresult.AttrResult, "fail")
	got, ok, err := ReadRecord(res, lr)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Record{Key: r.Hashes().Key, Outcome: policyresult.OutcomeFail}, got)

	lr.Attributes().Remove(policyresult.AttrPolicy)
	_, ok, err = ReadRecord(res, lr)
	assert.True(t, ok)
	assert.ErrorContains(t, err, "neither policy.result.key nor policy.name")
}
