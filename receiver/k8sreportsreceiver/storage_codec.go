// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unique"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/binenc"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// The entries of the stored state (storage.go) are binary: varints, and strings as length-prefixed fields
// (policyresult.AppendField). Each starts with its format, for the entries of a later format to be told apart.
const entryFormat = 1

const (
	// slotReportIsKey: the report's namespace and name are the object's, and are not stored again.
	slotReportIsKey = 1 << iota
	// slotRefused: the report's latest version was skipped as too large; its version and size follow.
	slotRefused
	slotFlags = slotReportIsKey | slotRefused
)

// The least bytes an item of a list takes, to bound a list's length by the entry's size when decoding.
const (
	minSubjectSize  = 5                              // five empty fields
	minResultSize   = 2*len(policyresult.Hash{}) + 3 // hashes, outcome, subject, identity
	minIdentitySize = 6                              // five empty fields and scored
)

// appendSlot encodes one report's state: its object, its version, the report, its subjects, then every result
// as its key and ID (16 bytes each), its outcome, the index of its subject plus one (0: none), and the number
// of its rule identity in the dictionary (identity assigns it). A PolicyReport result takes 35 bytes.
func appendSlot(b []byte, k objKey, e *emittedReport, identity func(unique.Handle[ruleIdentity]) uint64) []byte {
	b = append(b, entryFormat)
	b = policyresult.AppendFields(b, k.gvr.Group, k.gvr.Version, k.gvr.Resource, k.namespace, k.name, e.UID, e.ResourceVersion)
	var flags byte
	same := e.report.Namespace == k.namespace && e.report.Name == k.name
	if same {
		flags |= slotReportIsKey
	}
	if e.refused != nil {
		flags |= slotRefused
	}
	b = append(b, flags)
	b = policyresult.AppendField(b, e.report.Kind)
	if !same {
		b = policyresult.AppendFields(b, e.report.Namespace, e.report.Name)
	}
	if e.refused != nil {
		b = policyresult.AppendField(b, e.refused.resourceVersion)
		b = binary.AppendUvarint(b, uint64(e.refused.size.Records)) //nolint:gosec // G115: a size is not negative
		b = binary.AppendUvarint(b, uint64(e.refused.size.Bytes))   //nolint:gosec // G115: a size is not negative
	}
	b = binary.AppendUvarint(b, uint64(len(e.subjects)))
	for _, s := range e.subjects {
		b = policyresult.AppendFields(b, s.APIVersion, s.Kind, s.Namespace, s.Name, s.UID)
	}
	b = binary.AppendUvarint(b, uint64(len(e.results)))
	for i := range e.results {
		r := &e.results[i]
		b = append(b, r.hashes.Key[:]...)
		b = append(b, r.hashes.ID[:]...)
		b = append(b, byte(r.outcome))
		b = binary.AppendUvarint(b, uint64(r.subject+1)) //nolint:gosec // G115: subject is -1 or an index
		b = binary.AppendUvarint(b, identity(r.identity))
	}
	return b
}

// interner keeps one copy of the strings many stored reports repeat (resources, namespaces, kinds) while a
// state is loaded; names and UIDs are not passed through it.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// decodeSlot reads what appendSlot wrote; ids is the dictionary, and used marks every identity a result names.
func decodeSlot(b []byte, ids []unique.Handle[ruleIdentity], used []bool, in interner) (objKey, *emittedReport, error) {
	d := binenc.NewDecoder(b)
	if f := d.Byte(); f != entryFormat {
		return objKey{}, nil, fmt.Errorf("unknown format %d", f)
	}
	k := objKey{gvr: schema.GroupVersionResource{Group: in.get(d.Field()), Version: in.get(d.Field()), Resource: in.get(d.Field())},
		namespace: in.get(d.Field()), name: string(d.Field())}
	e := &emittedReport{UID: string(d.Field()), ResourceVersion: string(d.Field())}
	flags := d.Byte()
	if flags&^slotFlags != 0 {
		d.Fail(fmt.Errorf("unknown flags %#x", flags))
	}
	e.report.Kind = in.get(d.Field())
	if flags&slotReportIsKey != 0 {
		e.report.Namespace, e.report.Name = k.namespace, k.name
	} else {
		e.report.Namespace, e.report.Name = in.get(d.Field()), string(d.Field())
	}
	if flags&slotRefused != 0 {
		rv, records, size := string(d.Field()), d.Uvarint(), d.Uvarint()
		if records > math.MaxInt32 || size > math.MaxInt64 {
			d.Fail(fmt.Errorf("a refused version of %d records and %d bytes", records, size))
		}
		e.refused = &refusal{resourceVersion: rv, size: parse.Size{Records: int(records), Bytes: int64(size)}} //nolint:gosec // G115: checked
	}
	if n := d.Count(minSubjectSize); n > 0 {
		e.subjects = make([]policyresult.Resource, n)
		for i := range e.subjects {
			e.subjects[i] = policyresult.Resource{APIVersion: in.get(d.Field()), Kind: in.get(d.Field()),
				Namespace: in.get(d.Field()), Name: string(d.Field()), UID: string(d.Field())}
		}
	}
	if n := d.Count(minResultSize); n > 0 {
		e.results = make([]storedResult, n)
	}
	for i := range e.results {
		r := &e.results[i]
		copy(r.hashes.Key[:], d.Bytes(uint64(len(r.hashes.Key))))
		copy(r.hashes.ID[:], d.Bytes(uint64(len(r.hashes.ID))))
		r.outcome = outcomeCode(d.Byte())
		subject, id := d.Uvarint(), d.Uvarint()
		switch {
		case d.Err() != nil:
		case int(r.outcome) > len(policyresult.Outcomes):
			d.Fail(fmt.Errorf("result %d has the unknown outcome %d", i, r.outcome))
		case subject > uint64(len(e.subjects)):
			d.Fail(fmt.Errorf("result %d names subject %d of %d", i, subject, len(e.subjects)))
		case id >= uint64(len(ids)):
			d.Fail(fmt.Errorf("result %d names rule identity %d of %d", i, id, len(ids)))
		default:
			r.subject = int32(subject) - 1 //nolint:gosec // G115: bounded by the subjects
			r.identity = ids[id]
			used[id] = true
		}
	}
	if d.Err() == nil && d.Len() > 0 {
		d.Fail(fmt.Errorf("%d bytes after the state", d.Len()))
	}
	return k, e, d.Err()
}

// appendIdentities encodes a chunk of the dictionary of rule identities.
func appendIdentities(b []byte, ids []unique.Handle[ruleIdentity]) []byte {
	b = append(b, entryFormat)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, h := range ids {
		id := h.Value()
		b = policyresult.AppendFields(b, id.Source, id.Policy, id.Rule, id.Category, string(id.Severity))
		b = append(b, byte(id.Scored+1)) //nolint:gosec // G115: -1 to scoredScanRun
	}
	return b
}

// decodeIdentities reads a chunk appendIdentities wrote, which must hold want identities.
func decodeIdentities(b []byte, want int) ([]unique.Handle[ruleIdentity], error) {
	d := binenc.NewDecoder(b)
	if f := d.Byte(); f != entryFormat {
		return nil, fmt.Errorf("unknown format %d", f)
	}
	n := d.Count(minIdentitySize)
	if d.Err() == nil && n != want {
		return nil, fmt.Errorf("%d rule identities, want %d", n, want)
	}
	out := make([]unique.Handle[ruleIdentity], 0, n)
	for range n {
		id := ruleIdentity{Source: string(d.Field()), Policy: string(d.Field()), Rule: string(d.Field()),
			Category: string(d.Field()), Severity: policyresult.Severity(d.Field())}
		scored := int(d.Byte()) - 1
		if d.Err() != nil {
			break
		}
		if scored > int(scoredScanRun) {
			return nil, fmt.Errorf("rule identity %d has the unknown scored value %d", len(out), scored)
		}
		id.Scored = int8(scored) //nolint:gosec // G115: -1 to scoredScanRun
		out = append(out, unique.Make(id))
	}
	if d.Err() == nil && d.Len() > 0 {
		d.Fail(fmt.Errorf("%d bytes after the rule identities", d.Len()))
	}
	return out, d.Err()
}

// appendMeta encodes the entry of the counts: slots, and rule identities in the dictionary.
func appendMeta(b []byte, slots, identities int) []byte {
	b = append(b, entryFormat)
	b = binary.AppendUvarint(b, uint64(slots))         //nolint:gosec // G115: a count
	return binary.AppendUvarint(b, uint64(identities)) //nolint:gosec // G115: a count
}

var errStateTooLarge = errors.New("over the bound of the stored state")

func decodeMeta(b []byte) (slots, identities int, err error) {
	d := binenc.NewDecoder(b)
	if f := d.Byte(); f != entryFormat {
		return 0, 0, fmt.Errorf("unknown format %d", f)
	}
	s, i := d.Uvarint(), d.Uvarint()
	if d.Err() == nil && d.Len() > 0 {
		d.Fail(fmt.Errorf("%d bytes after the counts", d.Len()))
	}
	if err := d.Err(); err != nil {
		return 0, 0, err
	}
	if s > maxStoredSlots || i > maxStoredIdentities {
		return 0, 0, fmt.Errorf("%d slots and %d rule identities: %w (%d, %d)", s, i, errStateTooLarge, maxStoredSlots, maxStoredIdentities)
	}
	return int(s), int(i), nil
}
