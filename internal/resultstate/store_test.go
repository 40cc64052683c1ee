// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// openStorage opens a file_storage client on dir, as a component would in the collector.
func openStorage(t *testing.T, dir string) storage.Client {
	t.Helper()
	ext := filestoragetest.Start(t, dir)
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindProcessor,
		component.MustNewID("policy_aggregate"), "")
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, client.Close(context.Background()))
		assert.NoError(t, ext.Shutdown(context.Background()))
	})
	return client
}

type snapshot struct {
	counts, emitted map[string]policyresult.Counts
	outcomes        map[string]uint8
}

func snap(tl *Tally) snapshot {
	s := snapshot{counts: map[string]policyresult.Counts{}, emitted: map[string]policyresult.Counts{}, outcomes: map[string]uint8{}}
	tl.All(func(g *Group) {
		s.counts[g.Key] = g.Counts
		s.emitted[g.Key] = g.Emitted
	})
	for k, sl := range tl.keys {
		s.outcomes[hex.EncodeToString(k[:])] = sl.outcome
	}
	return s
}

func TestStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	tl := New(names, 1000)
	for i := range 300 {
		tl.Set(key(i), []string{"kyverno", []string{"a", "b", "c"}[i%3]}, policyresult.Outcomes[i%5])
	}
	tl.Set(key(1000), []string{"kyverno", "gone"}, policyresult.OutcomeFail)
	tl.All(tl.MarkEmitted)
	tl.Resolve(key(1000)) // an empty group whose empty summary is still due
	tl.Set(key(1), []string{"kyverno", "b"}, "")
	tl.Resolve(key(2))

	client := openStorage(t, dir)
	st := NewStore(client, "policy_aggregate")
	require.NoError(t, st.Load(ctx, New(names, 1000)))
	require.NoError(t, st.Save(ctx, tl))
	assert.Empty(t, tl.stored)
	require.NoError(t, st.Save(ctx, tl), "nothing to write")

	back := New(names, 1000)
	restarted := NewStore(client, "policy_aggregate")
	require.NoError(t, restarted.Load(ctx, back))
	assert.Equal(t, snap(tl), snap(back))
	assert.Empty(t, back.stored, "loading does not mark anything for writing")
	assert.Len(t, snap(back).counts, 4)

	// Emitting the empty group's summary forgets it, in storage too.
	back.All(back.MarkEmitted)
	require.NoError(t, restarted.Save(ctx, back))
	again := New(names, 1000)
	require.NoError(t, NewStore(client, "policy_aggregate").Load(ctx, again))
	assert.Len(t, snap(again).counts, 3)
	assert.Equal(t, snap(back), snap(again))
	raw, err := client.Get(ctx, "policy_aggregate/v1/group/"+policyresult.SummaryKey([]policyresult.Attribute{
		{Name: policyresult.AttrSource, Value: "kyverno"}, {Name: policyresult.AttrPolicy, Value: "gone"}}))
	require.NoError(t, err)
	assert.Nil(t, raw)
}

func TestStoreLoadEvictsOverMaxKeys(t *testing.T) {
	ctx := context.Background()
	client := openStorage(t, t.TempDir())
	tl := New(names, 100)
	for i := range 100 {
		tl.Set(key(i), []string{"kyverno", "p"}, policyresult.OutcomePass)
	}
	require.NoError(t, NewStore(client, "p").Save(ctx, tl))

	small := New(names, 60)
	require.NoError(t, NewStore(client, "p").Load(ctx, small))
	assert.Equal(t, 60, small.Len())
	assert.Equal(t, int64(40), small.Evictions())
	assert.NotEmpty(t, small.stored, "the smaller state must be written back")
}

func TestStoreRegroupedStateIsDiscarded(t *testing.T) {
	ctx := context.Background()
	client := openStorage(t, t.TempDir())
	tl := New(names, 100)
	tl.Set(key(1), []string{"kyverno", "p"}, policyresult.OutcomePass)
	require.NoError(t, NewStore(client, "p").Save(ctx, tl))

	other := New([]string{policyresult.AttrPolicy}, 100)
	st := NewStore(client, "p")
	err := st.Load(ctx, other)
	require.ErrorIs(t, err, ErrRegrouped)
	assert.ErrorContains(t, err, "[policy.source policy.name], now [policy.name]")
	assert.Equal(t, 0, other.Len())
	other.Set(key(1), []string{"p"}, policyresult.OutcomeFail)
	require.NoError(t, st.Save(ctx, other))

	back := New([]string{policyresult.AttrPolicy}, 100)
	require.NoError(t, NewStore(client, "p").Load(ctx, back))
	assert.Equal(t, snap(other), snap(back))
	raw, err := client.Get(ctx, "p/v1/group/"+tl.groups[0].Key)
	require.NoError(t, err)
	assert.Nil(t, raw, "the old grouping's entries are deleted")
}

func TestStoreRejectsCorruptEntries(t *testing.T) {
	ctx := context.Background()
	client := openStorage(t, t.TempDir())
	tl := New(names, 100)
	tl.Set(key(1), []string{"kyverno", "p"}, policyresult.OutcomePass)
	require.NoError(t, NewStore(client, "p").Save(ctx, tl))
	gk := "p/v1/group/" + tl.groups[0].Key
	good, err := client.Get(ctx, gk)
	require.NoError(t, err)

	for name, raw := range map[string][]byte{
		"truncated":      good[:len(good)-3],
		"format":         append([]byte{9}, good[1:]...),
		"value count":    append([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}, good[2:]...),
		"key count huge": append(good[:len(good)-17-1:len(good)-17-1], 0xff, 0xff, 0x03),
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, client.Set(ctx, gk, raw))
			assert.ErrorContains(t, NewStore(client, "p").Load(ctx, New(names, 100)), "decoding the stored group")
		})
	}
	require.NoError(t, client.Set(ctx, "p/v1/index", []byte("{")))
	assert.ErrorContains(t, NewStore(client, "p").Load(ctx, New(names, 100)), "decoding the state index")
}
