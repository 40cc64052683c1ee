// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

// WithoutPath returns object obj, whose members are ms, without the members at path (every one of them,
// should keys repeat) and the value found there (the last one, as lookups find it). obj itself is returned when
// no top-level member is on path; otherwise the top-level members and the objects along path are copied, never
// re-encoded.
func WithoutPath(obj []byte, ms Members, path []string) (body, removed []byte) {
	if len(path) == 0 {
		return obj, nil
	}
	removed, _ = ms.Path(path)
	for i := range ms {
		if string(ms[i].Name()) == path[0] {
			// Sized without the removed value: the body outlives the event's bytes, and a large input cut
			// out must not stay allocated as the body's spare capacity.
			return appendWithout(make([]byte, 0, len(obj)-len(removed)), obj, ms, path), removed
		}
	}
	return obj, removed
}

// appendWithout appends object obj, whose members are ms, without the members at path.
func appendWithout(dst, obj []byte, ms Members, path []string) []byte {
	dst = append(dst, '{')
	first := true
	for i := range ms {
		m := &ms[i]
		vstart := m.End - len(m.Value)
		match := string(m.Name()) == path[0]
		if match && len(path) == 1 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if match && len(m.Value) > 0 && m.Value[0] == '{' {
			dst = append(dst, obj[m.Start:vstart]...)
			dst = appendWithout(dst, m.Value, MembersOf(m.Value), path[1:])
			continue
		}
		dst = append(dst, obj[m.Start:m.End]...)
	}
	return append(dst, '}')
}
