// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// gkViolations are the violations of one complete audit run (audit_changes), compact enough that the
// Gatekeeper sidecar holds those of two runs of 100,000 violations within its memory limit (README.md,
// "Audit changes"): each is its key and the indexes of its fields in a table of the distinct strings of the
// run, sorted by key. The fields are what tells the violation (its key hashes them) and what its action is,
// which is all its resolved record says; the rest of its event (details, labels) is not kept.
type gkViolations struct {
	// run is the audit ID of the run that reported them.
	run  string
	strs []string
	keys []policyresult.Hash
	vs   []gkViolation
}

// gkViolation is a violation's fields, as indexes into gkViolations.strs.
type gkViolation [violationFields]uint32

const (
	vfPolicy = iota
	vfRule
	vfAction
	vfMessage
	vfAPIVersion
	vfKind
	vfNamespace
	vfName
	vfUID
	violationFields
)

func (v *gkViolations) len() int {
	if v == nil {
		return 0
	}
	return len(v.keys)
}

// find is the index of the violation of key; false when the run did not report it.
func (v *gkViolations) find(key policyresult.Hash) (int, bool) {
	if v == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(v.keys, key, compareHash)
}

func compareHash(a, b policyresult.Hash) int { return bytes.Compare(a[:], b[:]) }

func (v *gkViolations) field(i, f int) string { return v.strs[v.vs[i][f]] }

// action is the action of violation i.
func (v *gkViolations) action(i int) policyresult.Action {
	return policyresult.Action(v.field(i, vfAction))
}

// event is violation i as the export message Gatekeeper wrote for it, less what is not kept: what its resolved
// record is decoded from, so that the record says what the violation's own records said.
func (v *gkViolations) event(i int) ([]byte, error) {
	return json.Marshal(struct {
		ID                 string `json:"id"`
		EventType          string `json:"eventType"`
		Kind               string `json:"kind"`
		Name               string `json:"name"`
		Message            string `json:"message,omitempty"`
		EnforcementAction  string `json:"enforcementAction,omitempty"`
		ResourceAPIVersion string `json:"resourceAPIVersion"`
		ResourceKind       string `json:"resourceKind"`
		ResourceNamespace  string `json:"resourceNamespace,omitempty"`
		ResourceName       string `json:"resourceName"`
		ResourceUID        string `json:"resourceUID,omitempty"`
	}{
		v.run, "violation_audited", v.field(i, vfPolicy), v.field(i, vfRule), v.field(i, vfMessage),
		v.field(i, vfAction), v.field(i, vfAPIVersion), v.field(i, vfKind), v.field(i, vfNamespace),
		v.field(i, vfName), v.field(i, vfUID),
	})
}

// violationsBuilder gathers the violations of a run.
type violationsBuilder struct {
	v     gkViolations
	index map[string]uint32
}

func newViolationsBuilder(run string) *violationsBuilder {
	return &violationsBuilder{v: gkViolations{run: run, strs: []string{""}}, index: map[string]uint32{"": 0}}
}

// add adds the violation d of key. Its strings are copied: they share the bytes of a line read.
func (b *violationsBuilder) add(key policyresult.Hash, d *policyresult.Decision) {
	var v gkViolation
	for f, s := range [violationFields]string{
		vfPolicy: d.Policy, vfRule: d.Rule, vfAction: string(d.Action), vfMessage: strings.Join(d.Messages, "\n"),
		vfAPIVersion: d.Resource.APIVersion, vfKind: d.Resource.Kind, vfNamespace: d.Resource.Namespace,
		vfName: d.Resource.Name, vfUID: d.Resource.UID,
	} {
		v[f] = b.intern(s)
	}
	b.v.keys = append(b.v.keys, key)
	b.v.vs = append(b.v.vs, v)
}

// addFrom adds violation i of prev.
func (b *violationsBuilder) addFrom(prev *gkViolations, i int) {
	var v gkViolation
	for f := range v {
		v[f] = b.intern(prev.field(i, f))
	}
	b.v.keys = append(b.v.keys, prev.keys[i])
	b.v.vs = append(b.v.vs, v)
}

func (b *violationsBuilder) intern(s string) uint32 {
	if i, ok := b.index[s]; ok {
		return i
	}
	i := uint32(len(b.v.strs)) //nolint:gosec // G115: 2^32 strings exhaust memory long before
	s = strings.Clone(s)
	b.v.strs = append(b.v.strs, s)
	b.index[s] = i
	return i
}

// build sorts the violations by key; of a key added twice, the one added last is kept.
func (b *violationsBuilder) build() *gkViolations {
	v := &b.v
	order := make([]int32, len(v.keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(x, y int32) int { return compareHash(v.keys[x], v.keys[y]) })
	keys, vs := make([]policyresult.Hash, 0, len(order)), make([]gkViolation, 0, len(order))
	for n, i := range order {
		if n+1 < len(order) && v.keys[order[n+1]] == v.keys[i] {
			continue
		}
		keys, vs = append(keys, v.keys[i]), append(vs, v.vs[i])
	}
	v.keys, v.vs, v.strs = slices.Clip(keys), slices.Clip(vs), slices.Clip(v.strs)
	b.index = nil
	return v
}

// The stored form: a version, the run's ID, the strings, then each violation's key and field indexes, lengths
// and indexes as uvarints, and a CRC-32C of all that, by which damage is told. About 30 bytes a violation and
// its distinct strings (README.md, "Audit changes").
const violationsFormat = "gkv1"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func (v *gkViolations) marshal() []byte {
	if v == nil {
		return nil
	}
	size := len(violationsFormat) + binary.MaxVarintLen64*(2+len(v.strs)) + len(v.run) + crc32.Size +
		len(v.keys)*(len(policyresult.Hash{})+violationFields*binary.MaxVarintLen32)
	for _, s := range v.strs {
		size += len(s)
	}
	b := make([]byte, 0, size)
	b = append(b, violationsFormat...)
	b = appendString(b, v.run)
	b = binary.AppendUvarint(b, uint64(len(v.strs)))
	for _, s := range v.strs {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(v.keys)))
	for i, k := range v.keys {
		b = append(b, k[:]...)
		for _, f := range v.vs[i] {
			b = binary.AppendUvarint(b, uint64(f))
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errDamaged = errors.New("damaged")

// unmarshalViolations reads the stored form, checking every length and index against what is there, and that
// the keys are sorted and distinct as build leaves them: damaged state is an error, never a panic or a
// violation made up.
func unmarshalViolations(b []byte) (*gkViolations, error) {
	if !bytes.HasPrefix(b, []byte(violationsFormat)) || len(b) < len(violationsFormat)+crc32.Size {
		return nil, fmt.Errorf("%w: not in format %s", errDamaged, violationsFormat)
	}
	body := b[:len(b)-crc32.Size]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(b[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errDamaged)
	}
	r := &byteReader{b: body[len(violationsFormat):]}
	v := &gkViolations{run: r.string()}
	if _, ok := gatekeeperexport.AuditRunTime(strings.ReplaceAll(v.run, ":", "_") + gatekeeperexport.ReadyExt); !ok && r.err == nil {
		return nil, fmt.Errorf("%w: run %q is no audit ID", errDamaged, v.run)
	}
	n := r.count(1)
	v.strs = make([]string, 0, n)
	for range n {
		v.strs = append(v.strs, r.string())
	}
	n = r.count(len(policyresult.Hash{}) + violationFields)
	v.keys, v.vs = make([]policyresult.Hash, n), make([]gkViolation, n)
	for i := range n {
		copy(v.keys[i][:], r.bytes(len(policyresult.Hash{})))
		for f := range v.vs[i] {
			x := r.uvarint()
			if x >= uint64(len(v.strs)) && r.err == nil {
				r.err = fmt.Errorf("%w: violation %d: string %d of %d", errDamaged, i, x, len(v.strs))
			}
			v.vs[i][f] = uint32(x) //nolint:gosec // G115: below len(v.strs), itself below 2^32 (count)
		}
		if i > 0 && compareHash(v.keys[i-1], v.keys[i]) >= 0 && r.err == nil {
			r.err = fmt.Errorf("%w: violation %d: keys out of order", errDamaged, i)
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d bytes after the last violation", errDamaged, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

// byteReader reads the stored form; its first error sticks, and what it reads after is zero.
type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: a length or index is cut off", errDamaged)
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *byteReader) bytes(n int) []byte {
	if r.err == nil && n > len(r.b) {
		r.err = fmt.Errorf("%w: %d bytes wanted, %d left", errDamaged, n, len(r.b))
	}
	if r.err != nil {
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *byteReader) string() string {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: a string of %d bytes, %d left", errDamaged, n, len(r.b))
	}
	return string(r.bytes(int(n))) //nolint:gosec // G115: at most len(r.b) (checked above), or an error
}

// count reads a count of items of at least minBytes each, no more than the bytes left can hold, so that a
// damaged count allocates nothing.
func (r *byteReader) count(minBytes int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/minBytes) { //nolint:gosec // G115: a length is not negative
		r.err = fmt.Errorf("%w: %d items in %d bytes", errDamaged, n, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n) //nolint:gosec // G115: at most len(r.b)
}
