// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

import "fmt"

// StackMembers is how many top-level members a caller's buffer should hold to scan events without allocating;
// OPA events have about a dozen, Gatekeeper messages about twenty.
const StackMembers = 32

// Member is one member of an object.
type Member struct {
	// Key is the key as written, without quotes.
	Key []byte
	// Escaped says the key has escapes, which must be undone before it is compared.
	Escaped bool
	// Start and End delimit the member in the object, from the key's opening quote to the end of the value.
	Start, End int
	Value      []byte
	// Size is what the value costs once built.
	Size Size
}

// Name is the key with escapes undone, so that "\u0069nput" is recognised as input.
func (m *Member) Name() []byte {
	if !m.Escaped {
		return m.Key
	}
	return []byte(Unquote(m.Key))
}

// Members are the members of a validated object, in order. They are kept apart from the object's bytes, so
// that escape analysis can keep them on the caller's stack.
type Members []Member

// Last is the last member named key, the one encoding/json would take, or nil.
func (ms Members) Last(key string) *Member {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].Name()) == key {
			return &ms[i]
		}
	}
	return nil
}

// Lookup returns the value of the last member named key.
func (ms Members) Lookup(key string) ([]byte, bool) {
	if m := ms.Last(key); m != nil {
		return m.Value, true
	}
	return nil, false
}

// Path follows path from these members down, through objects only.
func (ms Members) Path(path []string) ([]byte, bool) {
	if len(path) == 0 {
		return nil, false
	}
	v, ok := ms.Lookup(path[0])
	for _, seg := range path[1:] {
		if !ok {
			break
		}
		v, ok = Lookup(v, seg)
	}
	return v, ok
}

// Object validates raw as one JSON object and returns it without surrounding space, and its members, listed
// into buf, which callers keep on their stack (see StackMembers).
func Object(raw []byte, buf Members) ([]byte, Members, error) {
	i := SkipSpace(raw, 0)
	end := len(raw)
	for end > i && IsSpace(raw[end-1]) {
		end--
	}
	if i == end {
		return nil, nil, fmt.Errorf("want a JSON object, got empty input")
	}
	if raw[i] != '{' {
		// Whatever it is, say so precisely: a valid array is "got array", a broken one a syntax error.
		j, err := ScanValue(raw, i, 0)
		if err != nil {
			return nil, nil, err
		}
		if j = SkipSpace(raw, j); j < end {
			return nil, nil, errBadChar(j, raw[j], "after top-level value")
		}
		return nil, nil, fmt.Errorf("want a JSON object, got %s", Type(raw[i:end]))
	}
	j, ms, err := ObjectAt(raw[:end], i, 0, buf)
	if err != nil {
		return nil, nil, err
	}
	if j = SkipSpace(raw[:end], j); j < end {
		return nil, nil, errBadChar(j, raw[j], "after top-level value")
	}
	return raw[i:end], ms, nil
}

// ObjectAt validates the object at d[i] (an opening brace) inside depth enclosing containers, lists its
// members into buf, and returns its end. The members' Start and End count from the object's brace.
func ObjectAt(d []byte, i, depth int, buf Members) (int, Members, error) {
	if depth+1 > MaxDepth {
		return i, nil, &SyntaxError{i, "exceeded max depth"}
	}
	s := scanner{d: d}
	ms := buf
	j := SkipSpace(d, i+1)
	if j < len(d) && d[j] == '}' {
		return j + 1, ms, nil
	}
	for {
		kend, esc, vstart, err := ScanKey(d, j)
		if err != nil {
			return 0, nil, err
		}
		s.values, s.widest = 1, 0
		vend, err := s.value(vstart, depth+1)
		if err != nil {
			return 0, nil, err
		}
		ms = append(ms, Member{
			Key: d[j+1 : kend-1], Escaped: esc, Start: j - i, End: vend - i, Value: d[vstart:vend],
			Size: Size{s.values, s.widest},
		})
		var more bool
		if j, more, err = ScanAfter(d, vend, '}'); err != nil || !more {
			return j, ms, err
		}
	}
}
