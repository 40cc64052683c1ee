// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate // import "github.com/otelcol-policy/otelcol-policy/internal/resultstate"

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/internal/binenc"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Store persists a Tally in a storage extension: one entry per group (attribute values, emitted counts, keys
// with outcomes) and an index of the groups, because storage clients cannot list their keys. Groups are the unit
// because a batch of results, coming from one report, touches few of them. Each Save is one storage batch, so
// the index and the groups never disagree after a crash.
type Store struct {
	client storage.Client
	prefix string
	// index mirrors the stored index, to rewrite it only when the set of groups changes.
	index map[string]struct{}
}

// NewStore stores under prefix in client.
func NewStore(client storage.Client, prefix string) *Store {
	return &Store{client: client, prefix: prefix, index: map[string]struct{}{}}
}

type storedIndex struct {
	Names  []string `json:"names"`
	Groups []string `json:"groups"`
}

// ErrRegrouped is returned by Load when the state was stored with other group attributes; it is discarded.
var ErrRegrouped = errors.New("the stored state was grouped by other attributes")

func (s *Store) indexKey() string           { return s.prefix + "/v1/index" }
func (s *Store) groupKey(key string) string { return s.prefix + "/v1/group/" + key }

// entryKey is the key of a component's entry of its own (an Extra) named name.
func (s *Store) entryKey(name string) string { return s.prefix + "/v1/" + name }

// Load reads the stored state into t, which must be empty. When the state was grouped by other attributes it
// returns an error wrapping ErrRegrouped, leaves t empty and deletes the old state at the next Save.
func (s *Store) Load(ctx context.Context, t *Tally) error {
	raw, err := s.client.Get(ctx, s.indexKey())
	if err != nil {
		return fmt.Errorf("reading the state index: %w", err)
	}
	if raw == nil {
		return nil
	}
	var idx storedIndex
	if err := json.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("decoding the state index: %w", err)
	}
	for _, key := range idx.Groups {
		s.index[key] = struct{}{}
	}
	if !slices.Equal(idx.Names, t.names) {
		for key := range s.index {
			t.stored["stale/"+key] = &Group{Key: key}
		}
		return fmt.Errorf("%w (%v, now %v)", ErrRegrouped, idx.Names, t.names)
	}
	ops := make([]*storage.Operation, len(idx.Groups))
	for i, key := range idx.Groups {
		ops[i] = storage.GetOperation(s.groupKey(key))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("reading the stored groups: %w", err)
	}
	evictionsBefore := t.evictions
	for _, op := range ops {
		if op.Value == nil {
			continue
		}
		if err := decodeGroup(op.Value, t); err != nil {
			return fmt.Errorf("decoding the stored group %s: %w", op.Key, err)
		}
	}
	if t.evictions == evictionsBefore {
		// What was just read is what is stored.
		clear(t.stored)
	}
	return nil
}

// Save writes the groups that changed since the last Save, and the operations extra, in one storage batch. The
// Store must be the one that loaded t, since it keeps the index of what is stored.
func (s *Store) Save(ctx context.Context, t *Tally, extra ...*storage.Operation) error {
	if len(t.stored) == 0 && len(extra) == 0 {
		return nil
	}
	ops := make([]*storage.Operation, 0, len(t.stored)+1+len(extra))
	ops = append(ops, extra...)
	index := maps.Clone(s.index)
	var buf []byte
	for id, g := range t.stored {
		if _, live := t.byID[id]; live {
			buf = encodeGroup(buf[:0], g, t)
			ops = append(ops, storage.SetOperation(s.groupKey(g.Key), slices.Clone(buf)))
			index[g.Key] = struct{}{}
			continue
		}
		ops = append(ops, storage.DeleteOperation(s.groupKey(g.Key)))
		delete(index, g.Key)
	}
	if !maps.Equal(index, s.index) {
		groups := slices.Sorted(maps.Keys(index))
		raw, err := json.Marshal(storedIndex{Names: t.names, Groups: groups})
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(s.indexKey(), raw))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("writing %d changed groups and %d other entries: %w", len(t.stored), len(extra), err)
	}
	s.index = index
	clear(t.stored)
	return nil
}

const groupFormat = 1

// encodeGroup writes: format, values, emitted counts, then every key with its outcome.
func encodeGroup(b []byte, g *Group, t *Tally) []byte {
	b = append(b, groupFormat)
	b = binary.AppendUvarint(b, uint64(len(g.Values)))
	b = policyresult.AppendFields(b, g.Values...)
	for _, c := range countFields(&g.Emitted) {
		b = binary.AppendVarint(b, *c)
	}
	b = binary.AppendUvarint(b, uint64(len(g.keys)))
	for _, k := range g.keys {
		b = append(b, k[:]...)
		b = append(b, t.keys[k].outcome)
	}
	return b
}

func decodeGroup(b []byte, t *Tally) error {
	d := binenc.NewDecoder(b)
	if f := d.Byte(); f != groupFormat {
		return fmt.Errorf("unknown format %d", f)
	}
	if n := d.Uvarint(); n != uint64(len(t.names)) {
		return fmt.Errorf("%d group values, want %d", n, len(t.names))
	}
	values := make([]string, len(t.names))
	for i := range values {
		values[i] = string(d.Field())
	}
	var emitted policyresult.Counts
	for _, c := range countFields(&emitted) {
		*c = d.Varint()
	}
	n := d.Uvarint()
	for range n {
		var k policyresult.Hash
		copy(k[:], d.Bytes(uint64(len(k))))
		o := outcomeOf(d.Byte())
		if d.Err() != nil {
			break
		}
		t.Set(k, values, o)
	}
	if err := d.Err(); err != nil {
		return err
	}
	// Set created the group unless every key was evicted; a group with only an emitted summary left must
	// still say it is empty.
	gi := t.group(values)
	g := t.groups[gi]
	g.Emitted = emitted
	t.dropIfDone(gi)
	return nil
}

func countFields(c *policyresult.Counts) [6]*int64 {
	return [6]*int64{&c.Pass, &c.Fail, &c.Warn, &c.Error, &c.Skip, &c.Total}
}
