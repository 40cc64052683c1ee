// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/logsubset"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		sizes                []int
		maxResults, maxBytes int
		want                 []span
	}{
		{"empty", nil, 3, 100, nil},
		{"one request", []int{10, 10}, 3, 100, []span{{0, 2}}},
		{"exactly max results", []int{10, 10, 10}, 3, 100, []span{{0, 3}}},
		{"by count", []int{10, 10, 10, 10, 10, 10, 10}, 3, 100, []span{{0, 3}, {3, 6}, {6, 7}}},
		{"one per request", []int{10, 10, 10}, 1, 100, []span{{0, 1}, {1, 2}, {2, 3}}},
		{"by bytes", []int{40, 40, 40, 40}, 10, 100, []span{{0, 2}, {2, 4}}},
		{"exactly max bytes", []int{50, 50, 50}, 10, 100, []span{{0, 2}, {2, 3}}},
		{"a result of max bytes alone", []int{10, 100, 10}, 10, 100, []span{{0, 1}, {1, 2}, {2, 3}}},
		{"count, then bytes", []int{10, 10, 95, 10}, 2, 100, []span{{0, 2}, {2, 3}, {3, 4}}},
		{"bytes, then count", []int{60, 60, 10, 10, 10}, 2, 100, []span{{0, 1}, {1, 3}, {3, 5}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, split(tt.sizes, tt.maxResults, tt.maxBytes))
		})
	}
}

func TestConvert(t *testing.T) {
	ld := plog.NewLogs()
	want := resultbatch.Append(ld, 0, 3, 0)
	resultbatch.AppendDecision(ld, "d-1")
	// A processor rewrote an identity attribute without recomputing the key: the conversion refuses it.
	tampered := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	r := resultbatch.Result(3, 0)
	policyresult.WriteLogRecord(&r, tampered)
	tampered.Attributes().PutStr(policyresult.AttrPolicy, "renamed")
	// A result whose message alone is larger than a request may be.
	big := resultbatch.Result(4, 0)
	big.Message = strings.Repeat("x", 2000)
	policyresult.WriteLogRecord(&big, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty())
	resultbatch.Append(ld, 5, 1, 0)

	b := convert(ld, 1000)
	require.Len(t, b.results, 4)
	assert.Equal(t, 1, b.skipped)
	assert.Equal(t, 2, b.invalid)
	assert.EqualError(t, b.firstInvalid, "attribute policy.result.key is "+r.Key()+" but the identity attributes give "+
		func() string { r.Policy = "renamed"; return r.Key() }())
	for i, w := range want {
		assert.Equal(t, w.Key(), b.results[i].GetKey())
		assert.Equal(t, w.ID(), b.results[i].GetId())
		assert.Equal(t, elementSize(b.results[i]), b.sizes[i])
	}
	fifth := resultbatch.Result(5, 0)
	assert.Equal(t, fifth.Key(), b.results[3].GetKey())
	assert.Equal(t, []logsubset.Location{at(0, 0, 0), at(0, 0, 1), at(0, 0, 2), at(2, 0, 0)}, b.locs)

	b = convert(ld, 100_000)
	assert.Equal(t, 1, b.invalid, "only the tampered record")
	assert.Len(t, b.results, 5)
}

func TestConvertTooLarge(t *testing.T) {
	ld := plog.NewLogs()
	big := resultbatch.Result(0, 0)
	big.Message = strings.Repeat("x", 2000)
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), resultbatch.Cluster)
	policyresult.WriteLogRecord(&big, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	b := convert(ld, 1000)
	require.Equal(t, 1, b.invalid)
	assert.ErrorIs(t, b.firstInvalid, errTooLarge)
	assert.Regexp(t, `^result larger than max_request_bytes: `+big.Key()+` is 2\d\d\d bytes, max_request_bytes is 1000$`, b.firstInvalid.Error())
}

func TestSubset(t *testing.T) {
	ld := plog.NewLogs()
	resultbatch.Append(ld, 0, 3, 0)
	resultbatch.AppendDecision(ld, "d-1")
	resultbatch.Append(ld, 3, 2, 0)
	ld.ResourceLogs().At(2).ScopeLogs().At(0).Scope().SetName("k8s_reports")

	got := logsubset.Subset(ld, []logsubset.Location{at(0, 0, 2), at(2, 0, 0), at(2, 0, 1)})
	require.Equal(t, 2, got.ResourceLogs().Len())
	assert.Equal(t, 3, got.LogRecordCount())
	cluster, _ := got.ResourceLogs().At(1).Resource().Attributes().Get(policyresult.AttrClusterName)
	assert.Equal(t, resultbatch.Cluster, cluster.Str())
	assert.Equal(t, "k8s_reports", got.ResourceLogs().At(1).ScopeLogs().At(0).Scope().Name())
	keys := func(rl plog.ResourceLogs) (out []string) {
		lrs := rl.ScopeLogs().At(0).LogRecords()
		for i := range lrs.Len() {
			v, _ := lrs.At(i).Attributes().Get(policyresult.AttrResultKey)
			out = append(out, v.Str())
		}
		return out
	}
	k := func(i int) string { r := resultbatch.Result(i, 0); return r.Key() }
	assert.Equal(t, []string{k(2)}, keys(got.ResourceLogs().At(0)))
	assert.Equal(t, []string{k(3), k(4)}, keys(got.ResourceLogs().At(1)))
}

func at(ri, si, li int) logsubset.Location { return logsubset.Location{RI: ri, SI: si, LI: li} }
