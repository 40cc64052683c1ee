package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import "bytes"

// The functions in this file walk values that scanJSONEvent has validated, so they skip rather than check. They
// still stop at the end of their slice on any input, so that a mistake can cost a wrong value, never a panic.

// skipJSONValue returns the end of the validated value at d[i].
func skipJSONValue(d []byte, i int) int {
	if i >= len(d) {
		return len(d)
	}
	switch d[i] {
	case '"':
		return skipJSONString(d, i)
	case '{', '[':
		depth := 0
		for {
			for i < len(d) && !jsonStructural[d[i]] {
				i++
			}
			if i >= len(d) {
				return len(d)
			}
			switch d[i] {
			case '"':
				i = skipJSONString(d, i)
				continue
			case '{', '[':
				depth++
			default:
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(d) && !jsonValueEnd[d[i]] {
		i++
	}
	return i
}

var (
	// jsonStructural marks what a skip through a container must look at.
	jsonStructural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}
	// jsonValueEnd marks what can follow a number or literal.
	jsonValueEnd = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}
)

// skipJSONString returns the end of the validated string whose opening quote is at d[i].
func skipJSONString(d []byte, i int) int {
	j := i + 1
	for {
		if j = nextJSONStringStop(d, j, false); j >= len(d) {
			return len(d)
		}
		if d[j] == '"' {
			return j + 1
		}
		j += 2
	}
}

// jsonCursor reads a validated value forward. Each value the cursor is at is consumed by one call of value,
// str, enter or eachMember, so that nested objects are walked once rather than skipped and then walked.
type jsonCursor struct {
	d []byte
	i int
}

// value consumes the value at the cursor and returns its bytes.
func (c *jsonCursor) value() []byte {
	start := skipJSONSpace(c.d, c.i)
	end := skipJSONValue(c.d, start)
	if end == start && end < len(c.d) {
		end++ // only on invalid input: move on rather than stand still
	}
	c.i = end
	return c.d[start:end]
}

// str consumes the value at the cursor and returns it if it is a string.
func (c *jsonCursor) str() string {
	s, _ := jsonString(c.value())
	return s
}

// enter consumes the opening bracket (open) of the object or array at the cursor; anything else is consumed
// whole and reported false.
func (c *jsonCursor) enter(open byte) bool {
	c.i = skipJSONSpace(c.d, c.i)
	if c.i < len(c.d) && c.d[c.i] == open {
		c.i++
		return true
	}
	c.value()
	return false
}

// member moves to the value of the next member of the object the cursor is in and returns the offset of its
// key and the key as written; at the end of the object it consumes the closing brace and returns false.
func (c *jsonCursor) member() (start int, key []byte, ok bool) {
	if !c.next() {
		return 0, nil, false
	}
	start = c.i
	if c.d[start] != '"' {
		c.i = len(c.d)
		return 0, nil, false
	}
	end := skipJSONString(c.d, start)
	key = c.d[start+1 : max(start+1, end-1)]
	c.i = skipJSONSpace(c.d, end)
	if c.i < len(c.d) && c.d[c.i] == ':' {
		c.i++
	}
	return start, key, true
}

// next moves to the next member or element of the container the cursor is in; at its end it consumes the
// closing bracket and returns false.
func (c *jsonCursor) next() bool {
	c.i = skipJSONSpace(c.d, c.i)
	if c.i < len(c.d) && c.d[c.i] == ',' {
		c.i = skipJSONSpace(c.d, c.i+1)
	}
	if c.i >= len(c.d) || c.d[c.i] == '}' || c.d[c.i] == ']' {
		c.i = min(c.i+1, len(c.d))
		return false
	}
	return true
}

// eachMember calls f with the name of each member of the object at the cursor, escapes undone. f consumes the
// values it wants; the others are skipped. Anything but an object is consumed and has no members.
func (c *jsonCursor) eachMember(f func(name []byte)) {
	if !c.enter('{') {
		return
	}
	for {
		_, key, ok := c.member()
		if !ok {
			return
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(jsonUnquote(key))
		}
		at := c.i
		if f(key); c.i == at {
			c.value()
		}
	}
}

// jsonObjectIter walks the members of a validated object value.
type jsonObjectIter struct {
	c    jsonCursor
	open bool
}

// jsonObjectMembers iterates over v's members; a v that is not an object has none.
func jsonObjectMembers(v []byte) jsonObjectIter {
	it := jsonObjectIter{c: jsonCursor{d: v}}
	it.open = it.c.enter('{')
	return it
}

func (it *jsonObjectIter) next() (jsonMember, bool) {
	if !it.open {
		return jsonMember{}, false
	}
	start, key, ok := it.c.member()
	if !ok {
		it.open = false
		return jsonMember{}, false
	}
	v := it.c.value()
	return jsonMember{key: key, esc: bytes.IndexByte(key, '\\') >= 0, start: start, end: it.c.i, value: v}, true
}

// jsonLookup returns the value of the last member of object v named key.
func jsonLookup(v []byte, key string) ([]byte, bool) {
	var found []byte
	ok := false
	for it := jsonObjectMembers(v); ; {
		m, more := it.next()
		if !more {
			return found, ok
		}
		if string(m.name()) == key {
			found, ok = m.value, true
		}
	}
}

// pathValue follows path from the top level, through objects only.
func (ms jsonMembers) pathValue(path []string) ([]byte, bool) {
	if len(path) == 0 {
		return nil, false
	}
	v, ok := ms.lookup(path[0])
	for _, seg := range path[1:] {
		if !ok {
			break
		}
		v, ok = jsonLookup(v, seg)
	}
	return v, ok
}

// withoutPath returns object obj, whose members are ms, without the members at path (every one of them,
// should keys repeat) and the value found there (the last one, as lookups find it). obj itself is returned when
// no top-level member is on path; otherwise the top-level members and the objects along path are copied, never
// re-encoded.
func withoutPath(obj []byte, ms jsonMembers, path []string) (body, removed []byte) {
	if len(path) == 0 {
		return obj, nil
	}
	removed, _ = ms.pathValue(path)
	for i := range ms {
		if string(ms[i].name()) == path[0] {
			// Sized without the removed value: the body outlives the event's bytes, and a large input cut
			// out must not stay allocated as the body's spare capacity.
			return appendJSONWithout(make([]byte, 0, len(obj)-len(removed)), obj, ms, path), removed
		}
	}
	return obj, removed
}

// appendJSONWithout appends object obj, whose members are ms, without the members at path.
func appendJSONWithout(dst, obj []byte, ms []jsonMember, path []string) []byte {
	dst = append(dst, '{')
	first := true
	for i := range ms {
		m := &ms[i]
		vstart := m.end - len(m.value)
		match := string(m.name()) == path[0]
		if match && len(path) == 1 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if match && len(m.value) > 0 && m.value[0] == '{' {
			dst = append(dst, obj[m.start:vstart]...)
			dst = appendJSONWithout(dst, m.value, jsonMembersOf(m.value), path[1:])
			continue
		}
		dst = append(dst, obj[m.start:m.end]...)
	}
	return append(dst, '}')
}

func jsonMembersOf(v []byte) []jsonMember {
	var ms []jsonMember
	for it := jsonObjectMembers(v); ; {
		m, ok := it.next()
		if !ok {
			return ms
		}
		ms = append(ms, m)
	}
}
