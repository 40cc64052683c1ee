// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unique"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// stateStore persists the emitted state in a storage extension, whose clients cannot list their keys. Every
// report's state is an entry of its own under a slot number (k8s_reports/v2/slot/<n>, n below the stored count
// of slots); the rule identities its results share with other reports are numbers into a dictionary stored
// append-only in chunks (k8s_reports/v2/identities/<chunk>); one small entry (k8s_reports/v2/meta) holds the
// counts of slots and identities. A commit writes the reports that changed, deletes the reports that went away
// (their slots are reused), and appends the identities first seen (rewriting the last chunk) and the counts,
// when they grew: its writes grow with the changes, not with the state. Each commit is one storage batch, so a
// crash never leaves a report naming an identity that was not stored, nor a count short of the entries.
//
// Loading reads the counts, the dictionary and every slot, in batches of loadBatch entries. A state of the
// first version (storage_v1.go) is rewritten in this form, in one batch that also deletes it. So is a state
// that wastes more than it holds: the dictionary keeps the identities of deleted reports (its bound is the
// identities in use at the last load plus every identity first seen since), and slots freed by deletes stay
// counted until reused; once the unused identities or the free slots are at least as many as those in use
// (and more than loadBatch), loading stores the state anew, dense, in one batch.
//
// For the testbed's PolicyReports (Pod Security Standards, 19 results for one Pod), a report's entry is 35 bytes
// per result plus about 215 for the report: its object, UID, version and Pod (BenchmarkStoredStateOfPSSReports).
type stateStore struct {
	client storage.Client
	// slots is where each stored report is; nil until loaded.
	slots map[objKey]uint32
	// free are the slots below count without a report, taken from the end (at load, the lowest last).
	free []uint32
	// count is the number of slots the stored meta entry gives.
	count int
	// ids is the stored dictionary of rule identities, idOf its inverse.
	ids  []unique.Handle[ruleIdentity]
	idOf map[unique.Handle[ruleIdentity]]uint64
}

const (
	storeNS         = "k8s_reports/v2/"
	storeMetaKey    = storeNS + "meta"
	storeSlotNS     = storeNS + "slot/"
	storeIdentityNS = storeNS + "identities/"

	// identityChunk is the number of rule identities an entry of the dictionary holds: a commit that adds
	// identities rewrites at most the last chunk besides the new ones.
	identityChunk = 128
	// loadBatch bounds the entries read in one batch while loading, and so the memory read ahead.
	loadBatch = 1024
	// maxStoredSlots and maxStoredIdentities bound what a meta entry may claim: 4 million reports, 16 million
	// identities, far beyond what an API server holds, so that a corrupt entry cannot make loading run for long
	// (nor the free list take more than 16 MB).
	maxStoredSlots      = 1 << 22
	maxStoredIdentities = 1 << 24
)

// The keys are hexadecimal of a fixed width, so that they sort as their numbers: an initial sync appends to the
// storage's B+tree and touches only its right edge, not pages all over the memory-mapped file (which count in
// the collector's RSS). bbolt then leaves the pages of entries of a PSS report's size about half full; keys
// spread over the tree fill them to two thirds, but every commit touches pages everywhere: for 50,000 reports,
// 19 MB of the file resident after the sync instead of 69 MB, 105 MB after a load instead of 72 MB.
func slotKey(n int) string     { return fmt.Sprintf("%s%08x", storeSlotNS, n) }
func identityKey(c int) string { return fmt.Sprintf("%s%08x", storeIdentityNS, c) }

func chunks(identities int) int { return (identities + identityChunk - 1) / identityChunk }

func (s *stateStore) reset() {
	s.slots, s.free, s.count = map[objKey]uint32{}, nil, 0
	s.ids, s.idOf = nil, map[unique.Handle[ruleIdentity]]uint64{}
}

// load reads every stored report, migrating or compacting the stored state first when it has to. The store
// cannot save after a failed load.
func (s *stateStore) load(ctx context.Context) (map[objKey]*emittedReport, error) {
	s.reset()
	out, err := s.read(ctx)
	if err != nil {
		s.slots = nil
		return nil, err
	}
	return out, nil
}

func (s *stateStore) read(ctx context.Context) (map[objKey]*emittedReport, error) {
	meta, err := s.client.Get(ctx, storeMetaKey)
	if err != nil {
		return nil, fmt.Errorf("reading the state's counts: %w", err)
	}
	if meta == nil {
		reports, v1, err := loadV1(ctx, s.client)
		if err != nil || len(v1) == 0 {
			return map[objKey]*emittedReport{}, err
		}
		return reports, s.rewrite(ctx, reports, v1)
	}
	count, identities, err := decodeMeta(meta)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", storeMetaKey, err)
	}
	ids := make([]unique.Handle[ruleIdentity], 0, min(identities, loadBatch*identityChunk))
	err = getEach(ctx, s.client, chunks(identities), identityKey, func(c int, value []byte) error {
		if value == nil {
			return errors.New("the entry is missing")
		}
		chunk, err := decodeIdentities(value, min(identityChunk, identities-c*identityChunk))
		ids = append(ids, chunk...)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[objKey]*emittedReport{}
	used, in := make([]bool, len(ids)), interner{}
	err = getEach(ctx, s.client, count, slotKey, func(slot int, value []byte) error {
		if value == nil {
			s.free = append(s.free, uint32(slot)) //nolint:gosec // G115: below maxStoredSlots
			return nil
		}
		k, r, err := decodeSlot(value, ids, used, in)
		if err != nil {
			return err
		}
		if other, dup := s.slots[k]; dup {
			return fmt.Errorf("%s is also in %s", k, slotKey(int(other)))
		}
		out[k], s.slots[k] = r, uint32(slot) //nolint:gosec // G115: below maxStoredSlots
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(s.free)
	s.count, s.ids = count, ids
	for i, h := range ids {
		s.idOf[h] = uint64(i)
	}
	inUse := 0
	for _, u := range used {
		if u {
			inUse++
		}
	}
	if unused := len(ids) - inUse; unused > loadBatch && unused >= inUse ||
		len(s.free) > loadBatch && len(s.free) >= len(out) {
		return out, s.rewrite(ctx, out, nil)
	}
	return out, nil
}

// getEach reads the entries key(0)..key(n-1) in batches of loadBatch and hands each value (nil when there is
// none) to f, whose error is returned naming the entry.
func getEach(ctx context.Context, client storage.Client, n int, key func(int) string, f func(int, []byte) error) error {
	ops := make([]*storage.Operation, 0, min(n, loadBatch))
	for from := 0; from < n; from += loadBatch {
		ops = ops[:0]
		for i := from; i < min(from+loadBatch, n); i++ {
			ops = append(ops, storage.GetOperation(key(i)))
		}
		if err := client.Batch(ctx, ops...); err != nil {
			return fmt.Errorf("reading the stored state: %w", err)
		}
		for i, op := range ops {
			if err := f(from+i, op.Value); err != nil {
				return fmt.Errorf("decoding the stored state %s: %w", op.Key, err)
			}
		}
	}
	return nil
}

// save writes the reports of one commit; a nil report is deleted. The store must have loaded the state.
func (s *stateStore) save(ctx context.Context, reports map[objKey]*emittedReport) error {
	if s.slots == nil {
		return errors.New("the stored state was not loaded")
	}
	c, err := s.stage(reports, false)
	if err != nil {
		return err
	}
	if err := s.client.Batch(ctx, c.ops...); err != nil {
		return err
	}
	s.apply(c)
	return nil
}

// rewrite stores reports anew, dense, in one batch that also deletes the entries stale (and those of the
// state it replaces).
func (s *stateStore) rewrite(ctx context.Context, reports map[objKey]*emittedReport, stale []string) error {
	next := &stateStore{client: s.client}
	next.reset()
	c, err := next.stage(reports, true)
	if err != nil {
		return err
	}
	for _, slot := range s.slots {
		if int(slot) >= len(reports) {
			stale = append(stale, slotKey(int(slot)))
		}
	}
	for chunk := chunks(len(c.newIDs)); chunk < chunks(len(s.ids)); chunk++ {
		stale = append(stale, identityKey(chunk))
	}
	for _, key := range stale {
		c.ops = append(c.ops, storage.DeleteOperation(key))
	}
	if err := s.client.Batch(ctx, c.ops...); err != nil {
		return fmt.Errorf("storing the state anew: %w", err)
	}
	next.apply(c)
	*s = *next
	return nil
}

// stagedCommit is a commit staged: the operations of its storage batch, and what the store holds once it is
// written.
type stagedCommit struct {
	ops []*storage.Operation
	// added are the slots of the reports stored anew, taken from the free list (the first taken of it) or
	// past the count; removed the reports deleted.
	added   map[objKey]uint32
	removed []objKey
	taken   int
	count   int
	// newIDs are the identities first seen, numbered after the stored ones.
	newIDs []unique.Handle[ruleIdentity]
	idOf   map[unique.Handle[ruleIdentity]]uint64
}

// stage encodes the reports of a commit, in the order of their keys, without changing the store. The counts
// are written when they change, or always with meta.
func (s *stateStore) stage(reports map[objKey]*emittedReport, meta bool) (*stagedCommit, error) {
	c := &stagedCommit{ops: make([]*storage.Operation, 0, len(reports)+2), added: map[objKey]uint32{}, count: s.count,
		idOf: map[unique.Handle[ruleIdentity]]uint64{}}
	identity := func(h unique.Handle[ruleIdentity]) uint64 {
		if n, ok := s.idOf[h]; ok {
			return n
		}
		if n, ok := c.idOf[h]; ok {
			return n
		}
		n := uint64(len(s.ids) + len(c.newIDs))
		c.newIDs = append(c.newIDs, h)
		c.idOf[h] = n
		return n
	}
	var buf []byte
	for _, k := range slices.SortedFunc(maps.Keys(reports), compareObjKeys) {
		r := reports[k]
		slot, stored := s.slots[k]
		switch {
		case r == nil && stored:
			c.ops = append(c.ops, storage.DeleteOperation(slotKey(int(slot))))
			c.removed = append(c.removed, k)
			continue
		case r == nil:
			continue
		case stored:
		case c.taken < len(s.free):
			c.taken++
			slot = s.free[len(s.free)-c.taken]
			c.added[k] = slot
		default:
			if c.count >= maxStoredSlots {
				return nil, fmt.Errorf("%d reports: %w", c.count, errStateTooLarge)
			}
			slot = uint32(c.count) //nolint:gosec // G115: below maxStoredSlots
			c.count++
			c.added[k] = slot
		}
		buf = appendSlot(buf[:0], k, r, identity)
		c.ops = append(c.ops, storage.SetOperation(slotKey(int(slot)), slices.Clone(buf)))
	}
	identities := len(s.ids) + len(c.newIDs)
	if identities > maxStoredIdentities {
		return nil, fmt.Errorf("%d rule identities: %w", identities, errStateTooLarge)
	}
	// The last stored chunk is written again if it has room for new identities, then the chunks after it.
	for chunk := len(s.ids) / identityChunk; len(c.newIDs) > 0 && chunk < chunks(identities); chunk++ {
		ids := make([]unique.Handle[ruleIdentity], 0, identityChunk)
		for i := chunk * identityChunk; i < min((chunk+1)*identityChunk, identities); i++ {
			if i < len(s.ids) {
				ids = append(ids, s.ids[i])
			} else {
				ids = append(ids, c.newIDs[i-len(s.ids)])
			}
		}
		buf = appendIdentities(buf[:0], ids)
		c.ops = append(c.ops, storage.SetOperation(identityKey(chunk), slices.Clone(buf)))
	}
	if meta || c.count != s.count || len(c.newIDs) > 0 {
		c.ops = append(c.ops, storage.SetOperation(storeMetaKey, appendMeta(nil, c.count, identities)))
	}
	return c, nil
}

// apply makes the store hold what the batch of c wrote.
func (s *stateStore) apply(c *stagedCommit) {
	s.free = s.free[:len(s.free)-c.taken]
	for _, k := range c.removed {
		s.free = append(s.free, s.slots[k])
		delete(s.slots, k)
	}
	maps.Copy(s.slots, c.added)
	s.count, s.ids = c.count, append(s.ids, c.newIDs...)
	maps.Copy(s.idOf, c.idOf)
}

func compareObjKeys(a, b objKey) int {
	return cmp.Or(cmp.Compare(a.gvr.Group, b.gvr.Group), cmp.Compare(a.gvr.Version, b.gvr.Version),
		cmp.Compare(a.gvr.Resource, b.gvr.Resource), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}
