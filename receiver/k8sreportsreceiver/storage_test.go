// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"
	"unique"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// loadedState is what a new store (a restart, the next leader) loads from client.
func loadedState(t *testing.T, client storage.Client) map[objKey]*emittedReport {
	t.Helper()
	loaded, err := (&stateStore{client: client}).load(context.Background())
	require.NoError(t, err)
	return loaded
}

// stored is the value of key in client, nil when there is none.
func stored(t *testing.T, client storage.Client, key string) []byte {
	t.Helper()
	v, err := client.Get(context.Background(), key)
	require.NoError(t, err)
	return v
}

// policyState is the state of a report in namespace shop with one result of each policy.
func policyState(uid string, policies ...string) *emittedReport {
	results := make([]parse.Result, len(policies))
	for i, p := range policies {
		results[i] = res(p, "pod-"+p, policyresult.OutcomeFail, "")
	}
	e := emittedOf(results)
	e.UID, e.ResourceVersion = uid, "1"
	return e
}

// emptyStore opens file_storage on a new directory, closed when the test ends, and a store that loaded its
// empty state.
func emptyStore(t testing.TB) (*countingClient, *stateStore) {
	t.Helper()
	client, stop := openStateStorage(t, t.TempDir())
	t.Cleanup(stop)
	s := &stateStore{client: client}
	_, err := s.load(context.Background())
	require.NoError(t, err)
	return client, s
}

// testDictionary numbers rule identities in the order first seen, as the store's dictionary does.
type testDictionary struct{ ids []unique.Handle[ruleIdentity] }

func (d *testDictionary) number(h unique.Handle[ruleIdentity]) uint64 {
	if i := slices.Index(d.ids, h); i >= 0 {
		return uint64(i)
	}
	n := uint64(len(d.ids))
	d.ids = append(d.ids, h)
	return n
}

func (d *testDictionary) decode(entry []byte) (objKey, *emittedReport, error) {
	return decodeSlot(entry, d.ids, make([]bool, len(d.ids)), interner{})
}

func shopKey(name string) objKey { return objKey{policyReportGVR, "shop", name} }

// everyKindOfState is a state of each shape the store encodes: subjects and none, every scored value and a scan
// run, a refused version, a report whose namespace and name are not the object's, and no results at all.
func everyKindOfState() map[objKey]*emittedReport {
	fixture := emittedOf(fixtureResults())
	fixture.UID, fixture.ResourceVersion = "uid-r1", "4711"

	scan := res("cis-scan", "", policyresult.OutcomeError, "")
	scan.Scan, scan.Resource = &policyresult.ScanRun{Run: "7"}, policyresult.Resource{}
	withScan := emittedOf([]parse.Result{scan, res("p1", "a", policyresult.OutcomeSkip, "")})

	refused := fixture.refusing("4712", parse.Size{Records: 70_000, Bytes: 1 << 30})
	refusedFirst := (*emittedReport)(nil).refusing("9", parse.Size{Records: 1, Bytes: 2})

	elsewhere := policyState("u-x", "p1", "p2")
	elsewhere.report = policyresult.Report{Kind: "Constraint", Namespace: "", Name: "other-name"}

	return map[objKey]*emittedReport{
		shopKey("r1"):      fixture,
		shopKey("scan"):    withScan,
		shopKey("refused"): refused,
		{clusterPolicyReportGVR, "", "refused-new"}: refusedFirst,
		{openReportGVR, "team-a", "elsewhere"}:      elsewhere,
		shopKey("empty"):                            {UID: "u-e", ResourceVersion: "3", report: policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "empty"}},
	}
}

// TestStoredResultIsSmall guards the size of what is kept in memory for every result of the cluster.
func TestStoredResultIsSmall(t *testing.T) {
	assert.Equal(t, uintptr(48), unsafe.Sizeof(storedResult{}))
}

func TestStateStoreRoundTripOfEveryShape(t *testing.T) {
	client, stop := openStateStorage(t, t.TempDir())
	defer stop()
	s := &stateStore{client: client}
	require.Error(t, s.save(context.Background(), map[objKey]*emittedReport{shopKey("a"): policyState("u", "p")}),
		"a store that did not load does not know what is stored")
	loaded, err := s.load(context.Background())
	require.NoError(t, err)
	assert.Empty(t, loaded)

	want := everyKindOfState()
	keys := slices.SortedFunc(maps.Keys(want), compareObjKeys)
	require.NoError(t, s.save(context.Background(), map[objKey]*emittedReport{keys[0]: want[keys[0]], keys[1]: want[keys[1]]}))
	rest := maps.Clone(want)
	delete(rest, keys[0])
	delete(rest, keys[1])
	require.NoError(t, s.save(context.Background(), rest))
	assert.Equal(t, want, loadedState(t, client))

	// A change, a deletion and a report deleted that was never stored.
	want[shopKey("r1")] = policyState("uid-r1", "p9")
	require.NoError(t, s.save(context.Background(), map[objKey]*emittedReport{shopKey("r1"): want[shopKey("r1")],
		shopKey("scan"): nil, shopKey("never"): nil}))
	delete(want, shopKey("scan"))
	assert.Equal(t, want, loadedState(t, client))
}

// setsOf are the keys the last batch of client set.
func (c *countingClient) setsOf(ctx context.Context, s *stateStore, reports map[objKey]*emittedReport) []string {
	c.lastSets = nil
	if err := s.save(ctx, reports); err != nil {
		panic(err)
	}
	return c.lastSets
}

func TestStateStoreReusesFreedSlots(t *testing.T) {
	ctx := context.Background()
	client, s := emptyStore(t)
	reports := map[objKey]*emittedReport{}
	for i := range 5 {
		reports[shopKey(fmt.Sprint("r", i))] = policyState(fmt.Sprint("u", i), "p")
	}
	assert.ElementsMatch(t, []string{slotKey(0), slotKey(1), slotKey(2), slotKey(3), slotKey(4), identityKey(0), storeMetaKey},
		client.setsOf(ctx, s, reports), "slots in the order of the keys, the dictionary, the count")

	require.NoError(t, s.save(ctx, map[objKey]*emittedReport{shopKey("r1"): nil, shopKey("r3"): nil}))
	assert.Nil(t, stored(t, client, slotKey(1)))
	assert.Nil(t, stored(t, client, slotKey(3)))
	sets := client.setsOf(ctx, s, map[objKey]*emittedReport{shopKey("r5"): policyState("u5", "p"), shopKey("r6"): policyState("u6", "p")})
	assert.ElementsMatch(t, []string{slotKey(1), slotKey(3)}, sets, "the freed slots are taken; the count is not written")

	// After a restart, the slots without a report are free again.
	require.NoError(t, s.save(ctx, map[objKey]*emittedReport{shopKey("r2"): nil, shopKey("r0"): nil}))
	s = &stateStore{client: client}
	loaded, err := s.load(ctx)
	require.NoError(t, err)
	assert.Len(t, loaded, 3)
	assert.Equal(t, []string{slotKey(0)}, client.setsOf(ctx, s, map[objKey]*emittedReport{shopKey("r7"): policyState("u7", "p")}),
		"the lowest free slot first")
	assert.Equal(t, []string{slotKey(2), slotKey(5), storeMetaKey},
		client.setsOf(ctx, s, map[objKey]*emittedReport{shopKey("r8"): policyState("u8", "p"), shopKey("r9"): policyState("u9", "p")}))
	assert.Len(t, loadedState(t, client), 6)
}

// TestStateStoreWritesGrowWithTheChangesNotTheState stores 1,000 and 10,000 PolicyReports of the testbed's
// shape, then makes the same commit on both: 52 reports changed, one deleted, one new. It writes the same
// entries of the same sizes, whatever the number of reports stored.
func TestStateStoreWritesGrowWithTheChangesNotTheState(t *testing.T) {
	ctx := context.Background()
	_, pss := pssReport(t, 0)
	changed := pss.refusing("2", parse.Size{Records: 1, Bytes: 1})
	commitOf := func(names []string, state *emittedReport) map[objKey]*emittedReport {
		out := make(map[objKey]*emittedReport, len(names))
		for _, n := range names {
			out[shopKey(n)] = state
		}
		return out
	}
	type written struct {
		sets    []string
		bytes   int64
		deletes int
	}
	measure := func(stored int) (initial, last written) {
		client, s := emptyStore(t)
		names := make([]string, stored)
		for i := range names {
			names[i] = fmt.Sprintf("report-%06d", i)
		}
		for chunk := range slices.Chunk(names, pssCommit) {
			before := client.written
			require.NoError(t, s.save(ctx, commitOf(chunk, pss)))
			initial.bytes = max(initial.bytes, client.written-before)
		}
		commit := commitOf(names[:pssCommit], changed)
		commit[shopKey(names[stored-1])] = nil
		commit[shopKey("new")] = pss
		before, deletes := client.written, client.deletes
		last.sets = client.setsOf(ctx, s, commit)
		last.bytes, last.deletes = client.written-before, client.deletes-deletes
		return initial, last
	}
	initialSmall, small := measure(1_000)
	initialLarge, large := measure(10_000)
	assert.Equal(t, small.bytes, large.bytes, "the bytes written by the same commit")
	assert.Len(t, large.sets, pssCommit+2, "the reports changed and new, and the count")
	assert.Equal(t, 1, large.deletes)
	assert.Less(t, large.bytes, int64((pssCommit+1)*1000), "under 1,000 bytes per report of 19 results")
	assert.Equal(t, initialSmall.bytes, initialLarge.bytes, "the largest commit of the initial sync")
}

// TestStateStoreCommitIsAtomic fails each commit of a sequence in turn, as a crash before its storage batch was
// written would: what is loaded then is the state before that commit, and the same store commits it with the
// next one, as the emitter does. The sequence adds rule identities across a chunk of the dictionary, changes,
// deletes and reuses a slot.
func TestStateStoreCommitIsAtomic(t *testing.T) {
	ctx := context.Background()
	many := make([]string, identityChunk+5)
	for i := range many {
		many[i] = fmt.Sprintf("policy-%03d", i)
	}
	commits := []map[objKey]*emittedReport{
		{shopKey("a"): policyState("ua", "p1", "p2"), shopKey("b"): policyState("ub", "p2", "p3")},
		{shopKey("a"): policyState("ua", "p1", "p4"), shopKey("c"): policyState("uc", many...)},
		{shopKey("b"): nil, shopKey("c"): policyState("uc", "p1")},
		{shopKey("d"): policyState("ud", "p5", "p1"), shopKey("a"): nil},
	}
	after := make([]map[objKey]*emittedReport, len(commits)+1)
	after[0] = map[objKey]*emittedReport{}
	for i, c := range commits {
		after[i+1] = maps.Clone(after[i])
		for k, r := range c {
			if r == nil {
				delete(after[i+1], k)
			} else {
				after[i+1][k] = r
			}
		}
	}
	for failing := range commits {
		t.Run(fmt.Sprint("commit ", failing), func(t *testing.T) {
			client, s := emptyStore(t)
			for i, c := range commits {
				if i == failing {
					client.fail = true
					require.Error(t, s.save(ctx, c))
					client.fail = false
					assert.Equal(t, after[i], loadedState(t, client), "a failed commit leaves the state before it")
				}
				require.NoError(t, s.save(ctx, c))
				assert.Equal(t, after[i+1], loadedState(t, client), "after commit %d", i)
			}
		})
	}
}

func TestStoredStateIsCompactedAtLoad(t *testing.T) {
	ctx := context.Background()
	const reports = loadBatch + 100
	for name, tt := range map[string]struct {
		// first is the policy of report i, then is its state in the second commit (nil: deleted; none: unchanged)
		first func(i int) string
		then  func(i int) (state *emittedReport, changed bool)
		// slots and identities are the counts once compacted.
		slots, identities int
	}{
		"identities no longer used": {
			first: func(i int) string { return fmt.Sprint("policy-", i) },
			then: func(i int) (*emittedReport, bool) {
				return policyState(fmt.Sprint("u", i), "policy-shared"), i >= 24
			},
			slots: reports, identities: 25,
		},
		"free slots": {
			first: func(i int) string { return fmt.Sprint("policy-", i%3) },
			then:  func(i int) (*emittedReport, bool) { return nil, i%100 != 0 },
			slots: 12, identities: 3,
		},
	} {
		t.Run(name, func(t *testing.T) {
			client, s := emptyStore(t)
			want, second := map[objKey]*emittedReport{}, map[objKey]*emittedReport{}
			for i := range reports {
				k := shopKey(fmt.Sprintf("r-%05d", i))
				want[k] = policyState(fmt.Sprint("u", i), tt.first(i))
				if next, changed := tt.then(i); changed {
					second[k] = next
				}
			}
			require.NoError(t, s.save(ctx, want))
			require.NoError(t, s.save(ctx, second))
			for k, r := range second {
				if r == nil {
					delete(want, k)
				} else {
					want[k] = r
				}
			}
			slots, _, err := decodeMeta(stored(t, client, storeMetaKey))
			require.NoError(t, err)
			require.Equal(t, reports, slots)

			assert.Equal(t, want, loadedState(t, client), "the state loaded is the state, compacted or not")
			slots, identities, err := decodeMeta(stored(t, client, storeMetaKey))
			require.NoError(t, err)
			assert.Equal(t, tt.slots, slots, "the slots are dense again")
			assert.Equal(t, tt.identities, identities, "the dictionary holds the identities in use")
			assert.Nil(t, stored(t, client, slotKey(slots)))
			assert.Nil(t, stored(t, client, identityKey(chunks(identities))))

			writes := client.sets + client.deletes
			assert.Equal(t, want, loadedState(t, client))
			assert.Equal(t, writes, client.sets+client.deletes, "a compact state is loaded without writing")
		})
	}
}

func TestStoredStateMigratesFromTheFirstVersion(t *testing.T) {
	ctx := context.Background()
	client, stop := openStateStorage(t, t.TempDir())
	defer stop()
	want := everyKindOfState()
	index := []string{"k8s_reports/v1/report/wgpolicyk8s.io/v1alpha2/policyreports/shop/listed-but-missing"}
	ops := []*storage.Operation{}
	for k, r := range want {
		key := storeV1ReportNS + k.gvr.Group + "/" + k.gvr.Version + "/" + k.gvr.Resource + "/" + k.namespace + "/" + k.name
		raw, err := r.MarshalJSON()
		require.NoError(t, err)
		index = append(index, key)
		ops = append(ops, storage.SetOperation(key, raw))
	}
	rawIndex, err := json.Marshal(index)
	require.NoError(t, err)
	require.NoError(t, client.Batch(ctx, append(ops, storage.SetOperation(storeV1IndexKey, rawIndex))...))

	client.fail = true
	_, err = (&stateStore{client: client}).load(ctx)
	require.ErrorContains(t, err, "injected failure", "the state cannot be migrated while the storage refuses writes")
	client.fail = false
	require.NotNil(t, stored(t, client, storeV1IndexKey), "the first version's state is left as it was")

	batches, writes := client.batches, client.sets+client.deletes
	assert.Equal(t, want, loadedState(t, client))
	assert.Equal(t, len(want)+2+len(index)+1, client.sets+client.deletes-writes,
		"the reports, the dictionary and the counts written, every entry of the first version deleted")
	assert.Equal(t, 4, client.batches-batches, "the counts, the first version's index and reports read, one batch written")
	for _, key := range index {
		assert.Nil(t, stored(t, client, key))
	}
	assert.Nil(t, stored(t, client, storeV1IndexKey))

	writes = client.sets + client.deletes
	assert.Equal(t, want, loadedState(t, client), "loaded again")
	assert.Equal(t, writes, client.sets+client.deletes, "and not written again")
}

// hostileSlot is a stored report for the dictionary of the tests of hostile entries: four identities.
func hostileSlot(e *emittedReport, identity func(unique.Handle[ruleIdentity]) uint64) []byte {
	return appendSlot(nil, shopKey("r1"), e, identity)
}

func TestStoredStateRefusesHostileEntries(t *testing.T) {
	fixture := emittedOf(fixtureResults())
	dict := &testDictionary{}
	number, ids := dict.number, func() []unique.Handle[ruleIdentity] { return dict.ids }
	valid := hostileSlot(fixture, number)
	require.Len(t, ids(), 4)
	decode := func(b []byte) error {
		_, _, err := dict.decode(b)
		return err
	}
	require.NoError(t, decode(valid))

	for n := range len(valid) {
		assert.Error(t, decode(valid[:n]), "truncated to %d bytes", n)
	}
	header := len(policyresult.AppendFields(nil, policyReportGVR.Group, policyReportGVR.Version, policyReportGVR.Resource,
		"shop", "r1", fixture.UID, fixture.ResourceVersion))
	badSubject := *fixture
	badSubject.results = slices.Clone(fixture.results)
	badSubject.results[1].subject = 7
	badOutcome := *fixture
	badOutcome.results = slices.Clone(fixture.results)
	badOutcome.results[2].outcome = 9
	noResults := &emittedReport{report: fixture.report}
	for name, tt := range map[string]struct {
		entry []byte
		err   string
	}{
		"unknown format":         {append([]byte{9}, valid[1:]...), "unknown format 9"},
		"unknown flags":          {slices.Concat(valid[:header+1], []byte{0x80}, valid[header+2:]), "unknown flags 0x80"},
		"bytes after it":         {append(slices.Clone(valid), 0), "1 bytes after the state"},
		"subject out of range":   {hostileSlot(&badSubject, number), "result 1 names subject 8 of 2"},
		"unknown outcome":        {hostileSlot(&badOutcome, number), "result 2 has the unknown outcome 9"},
		"identity out of range":  {hostileSlot(fixture, func(unique.Handle[ruleIdentity]) uint64 { return 4 }), "result 0 names rule identity 4 of 4"},
		"more results than fit":  {append(hostileSlot(noResults, number)[:len(hostileSlot(noResults, number))-1], 0xff, 0xff, 0xff, 0xff, 0x0f), "4294967295 items of at least 35 bytes"},
		"more subjects than fit": {slices.Concat(hostileSlot(noResults, number)[:len(hostileSlot(noResults, number))-2], []byte{0xff, 0xff, 0x03}, []byte{0}), "65535 items of at least 5 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := decode(tt.entry)
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "no allocation beyond the entry's size")
		})
	}

	chunk := appendIdentities(nil, ids())
	for n := range len(chunk) {
		_, err := decodeIdentities(chunk[:n], len(ids()))
		assert.Error(t, err, "a chunk truncated to %d bytes", n)
	}
	_, err := decodeIdentities(chunk, 5)
	assert.ErrorContains(t, err, "4 rule identities, want 5")
	scored := slices.Clone(chunk)
	scored[len(scored)-1] = 9
	_, err = decodeIdentities(scored, 4)
	assert.ErrorContains(t, err, "unknown scored value 8")
	_, _, err = decodeMeta(appendMeta(nil, maxStoredSlots+1, 0))
	assert.ErrorIs(t, err, errStateTooLarge)

	// Loading names the entry at fault.
	full := make([]unique.Handle[ruleIdentity], identityChunk)
	for i := range full {
		full[i] = unique.Make(ruleIdentity{Policy: fmt.Sprint("p", i)})
	}
	fullChunk := appendIdentities(nil, full)
	for name, tt := range map[string]struct {
		entries map[string][]byte
		err     string
	}{
		"a corrupt report": {map[string][]byte{storeMetaKey: appendMeta(nil, 2, 4), identityKey(0): chunk,
			slotKey(0): valid, slotKey(1): valid[:40]}, slotKey(1) + ": truncated entry"},
		"a report twice": {map[string][]byte{storeMetaKey: appendMeta(nil, 2, 4), identityKey(0): chunk,
			slotKey(0): valid, slotKey(1): valid}, slotKey(1) + ": policyreports.wgpolicyk8s.io shop/r1 is also in " + slotKey(0)},
		"a chunk of identities short": {map[string][]byte{storeMetaKey: appendMeta(nil, 1, identityChunk+1), identityKey(0): chunk},
			identityKey(0) + ": 4 rule identities, want 128"},
		"a missing chunk of identities": {map[string][]byte{storeMetaKey: appendMeta(nil, 1, identityChunk+1), identityKey(0): fullChunk},
			identityKey(1) + ": the entry is missing"},
		"counts beyond the bound": {map[string][]byte{storeMetaKey: appendMeta(nil, 1, maxStoredIdentities+1)}, storeMetaKey},
		"corrupt counts":          {map[string][]byte{storeMetaKey: {1, 0x80}}, storeMetaKey + ": truncated entry"},
	} {
		t.Run(name, func(t *testing.T) {
			client, stop := openStateStorage(t, t.TempDir())
			defer stop()
			for k, v := range tt.entries {
				require.NoError(t, client.Set(context.Background(), k, v))
			}
			s := &stateStore{client: client}
			_, err := s.load(context.Background())
			require.ErrorContains(t, err, tt.err)
			require.Error(t, s.save(context.Background(), map[objKey]*emittedReport{shopKey("x"): fixture}),
				"a store that failed to load does not write")
		})
	}
}

// FuzzStoredReport decodes arbitrary entries as a stored report: an error or a state that encodes to the same
// entry, never a panic.
func FuzzStoredReport(f *testing.F) {
	dict := &testDictionary{}
	for _, e := range everyKindOfState() {
		f.Add(hostileSlot(e, dict.number))
	}
	f.Fuzz(func(t *testing.T, entry []byte) {
		k, e, err := dict.decode(entry)
		if err != nil {
			return
		}
		_, e2, err := dict.decode(appendSlot(nil, k, e, dict.number))
		require.NoError(t, err)
		assert.Equal(t, e, e2)
	})
}
