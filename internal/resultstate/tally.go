// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package resultstate keeps the latest outcome of every result key, grouped by a configured set of attributes,
// with counts per group. The policy_aggregate processor and the policy_metrics connector share it: both must
// know the current posture, while the receivers emit only changes.
package resultstate // import "github.com/otelcol-policy/otelcol-policy/internal/resultstate"

import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

// noOutcome is the stored outcome of a result without one; it counts towards the total only.
const noOutcome uint8 = 0xff

var outcomes = policyresult.Outcomes

func outcomeIndex(o policyresult.Outcome) uint8 {
	for i, v := range outcomes {
		if v == o {
			return uint8(i)
		}
	}
	return noOutcome
}

func outcomeOf(i uint8) policyresult.Outcome {
	if int(i) < len(outcomes) {
		return outcomes[i]
	}
	return ""
}

// slot is where a key's state lives: 16 bytes next to the 16-byte key, so a million keys cost tens of megabytes.
type slot struct {
	group uint32
	// idx is the key's position in its group's key list, for removal in constant time.
	idx uint32
	// seq orders updates, for evicting the least recently updated key.
	seq     uint32
	outcome uint8
}

// Group is one group of results and its counts.
type Group struct {
	// Values are the group attribute values, in the order of the Tally's attribute names.
	Values []string
	// Key is policyresult.SummaryKey of the group attributes.
	Key    string
	Counts policyresult.Counts
	// Emitted are the counts of the last summary the next consumer accepted.
	Emitted policyresult.Counts

	keys []policyresult.Hash
	// id is the group's string form in Tally.byID.
	id string
}

// Tally is the state. It is not safe for concurrent use; components serialise access.
type Tally struct {
	names   []string
	maxKeys int

	keys   map[policyresult.Hash]slot
	groups []*Group
	free   []uint32
	byID   map[string]uint32
	seq    uint32
	idBuf  []byte

	// stored holds the groups whose storage entry is out of date; removed groups stay here until written.
	stored    map[string]*Group
	evictions int64
}

// New tracks results grouped by the attributes names (in this order), with at most maxKeys keys.
func New(names []string, maxKeys int) *Tally {
	return &Tally{
		names:   names,
		maxKeys: maxKeys,
		keys:    map[policyresult.Hash]slot{},
		byID:    map[string]uint32{},
		stored:  map[string]*Group{},
	}
}

// Reset forgets every key and group, as New would: a replica that stops leading holds no state.
func (t *Tally) Reset() { *t = *New(t.names, t.maxKeys) }

// Names are the group attribute names.
func (t *Tally) Names() []string { return t.names }

// Len is the number of keys.
func (t *Tally) Len() int { return len(t.keys) }

// Groups is the number of groups.
func (t *Tally) Groups() int { return len(t.byID) }

// Evictions is the number of keys evicted since New because the tally was full.
func (t *Tally) Evictions() int64 { return t.evictions }

// Set records o as the latest outcome of k, in the group of values. It returns how many keys it evicted to
// make room.
func (t *Tally) Set(k policyresult.Hash, values []string, o policyresult.Outcome) (evicted int) {
	s, ok := t.keys[k]
	// Evict before finding the group: an eviction may forget the very group this key joins.
	for !ok && len(t.keys) >= t.maxKeys && t.evictOne() {
		evicted++
	}
	gi := t.group(values)
	oi := outcomeIndex(o)
	t.seq++
	switch {
	case ok && s.group == gi:
		if s.outcome != oi {
			g := t.groups[gi]
			g.Counts.Add(outcomeOf(s.outcome), -1)
			g.Counts.Add(o, 1)
			s.outcome = oi
			t.stored[g.id] = g
		}
		s.seq = t.seq
		t.keys[k] = s
		return evicted
	case ok:
		t.remove(k, s)
	}
	t.add(k, gi, oi)
	return evicted
}

// Resolve forgets k: its result went away.
func (t *Tally) Resolve(k policyresult.Hash) {
	if s, ok := t.keys[k]; ok {
		t.remove(k, s)
	}
}

func (t *Tally) add(k policyresult.Hash, gi uint32, oi uint8) {
	g := t.groups[gi]
	g.keys = append(g.keys, k)
	t.keys[k] = slot{group: gi, idx: uint32(len(g.keys) - 1), seq: t.seq, outcome: oi} //nolint:gosec // G115: max_keys bounds it
	g.Counts.Add(outcomeOf(oi), 1)
	t.stored[g.id] = g
}

func (t *Tally) remove(k policyresult.Hash, s slot) {
	g := t.groups[s.group]
	last := len(g.keys) - 1
	if int(s.idx) != last {
		moved := g.keys[last]
		g.keys[s.idx] = moved
		ms := t.keys[moved]
		ms.idx = s.idx
		t.keys[moved] = ms
	}
	g.keys = g.keys[:last]
	delete(t.keys, k)
	g.Counts.Add(outcomeOf(s.outcome), -1)
	t.stored[g.id] = g
	t.dropIfDone(s.group)
}

// evictSample is how many keys an eviction compares: Redis's approximation of least recently used, which needs
// no list through all keys.
const evictSample = 5

func (t *Tally) evictOne() bool {
	var victim policyresult.Hash
	var vs slot
	found := false
	n := 0
	for k, s := range t.keys {
		// Ages are differences, so the comparison survives the wrap-around of seq.
		if !found || t.seq-s.seq > t.seq-vs.seq {
			victim, vs, found = k, s, true
		}
		if n++; n == evictSample {
			break
		}
	}
	if found {
		t.remove(victim, vs)
		t.evictions++
	}
	return found
}

// group finds or creates the group of values. The lookup builds its map key in a reused buffer, so finding an
// existing group allocates nothing.
func (t *Tally) group(values []string) uint32 {
	b := policyresult.AppendFields(t.idBuf[:0], values...)
	t.idBuf = b
	if gi, ok := t.byID[string(b)]; ok {
		return gi
	}
	g := &Group{Values: append([]string(nil), values...), id: string(b)}
	attrs := make([]policyresult.Attribute, len(values))
	for i, v := range values {
		attrs[i] = policyresult.Attribute{Name: t.names[i], Value: v}
	}
	g.Key = policyresult.SummaryKey(attrs)
	var gi uint32
	if n := len(t.free); n > 0 {
		gi = t.free[n-1]
		t.free = t.free[:n-1]
		t.groups[gi] = g
	} else {
		gi = uint32(len(t.groups)) //nolint:gosec // G115: max_keys bounds the groups too
		t.groups = append(t.groups, g)
	}
	t.byID[g.id] = gi
	return gi
}

// dropIfDone forgets a group that has no keys and whose last summary already said so.
func (t *Tally) dropIfDone(gi uint32) {
	g := t.groups[gi]
	if len(g.keys) > 0 || g.Emitted != (policyresult.Counts{}) {
		return
	}
	delete(t.byID, g.id)
	t.groups[gi] = nil
	t.free = append(t.free, gi)
	t.stored[g.id] = g
}

// Changed calls f for every group whose counts differ from its last emitted summary.
func (t *Tally) Changed(f func(*Group)) {
	for _, g := range t.groups {
		if g != nil && g.Counts != g.Emitted {
			f(g)
		}
	}
}

// All calls f for every group.
func (t *Tally) All(f func(*Group)) {
	for _, g := range t.groups {
		if g != nil {
			f(g)
		}
	}
}

// MarkEmitted records that the next consumer accepted a summary of g's current counts. A group left without
// keys is forgotten once its empty summary was emitted.
func (t *Tally) MarkEmitted(g *Group) {
	if g.Emitted == g.Counts {
		return
	}
	g.Emitted = g.Counts
	t.stored[g.id] = g
	if gi, ok := t.byID[g.id]; ok {
		t.dropIfDone(gi)
	}
}
