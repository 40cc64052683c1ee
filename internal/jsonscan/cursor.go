// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

import "bytes"

// Cursor reads a validated value forward. Each value the cursor is at is consumed by one call of Value, Str or
// EachMember, so that nested objects are walked once rather than skipped and then walked.
type Cursor struct {
	d []byte
	i int
}

// NewCursor is a cursor at the start of validated value v.
func NewCursor(v []byte) Cursor { return Cursor{d: v} }

// Value consumes the value at the cursor and returns its bytes.
func (c *Cursor) Value() []byte {
	start := SkipSpace(c.d, c.i)
	end := Skip(c.d, start)
	if end == start && end < len(c.d) {
		end++ // only on invalid input: move on rather than stand still
	}
	c.i = end
	return c.d[start:end]
}

// Str consumes the value at the cursor and returns it if it is a string.
func (c *Cursor) Str() string {
	s, _ := String(c.Value())
	return s
}

// enter consumes the opening bracket (open) of the object or array at the cursor; anything else is consumed
// whole and reported false.
func (c *Cursor) enter(open byte) bool {
	c.i = SkipSpace(c.d, c.i)
	if c.i < len(c.d) && c.d[c.i] == open {
		c.i++
		return true
	}
	c.Value()
	return false
}

// member moves to the value of the next member of the object the cursor is in and returns the offset of its
// key and the key as written; at the end of the object it consumes the closing brace and returns false.
func (c *Cursor) member() (start int, key []byte, ok bool) {
	if !c.next() {
		return 0, nil, false
	}
	start = c.i
	if c.d[start] != '"' {
		c.i = len(c.d)
		return 0, nil, false
	}
	end := skipString(c.d, start)
	key = c.d[start+1 : max(start+1, end-1)]
	c.i = SkipSpace(c.d, end)
	if c.i < len(c.d) && c.d[c.i] == ':' {
		c.i++
	}
	return start, key, true
}

// next moves to the next member or element of the container the cursor is in; at its end it consumes the
// closing bracket and returns false.
func (c *Cursor) next() bool {
	c.i = SkipSpace(c.d, c.i)
	if c.i < len(c.d) && c.d[c.i] == ',' {
		c.i = SkipSpace(c.d, c.i+1)
	}
	if c.i >= len(c.d) || c.d[c.i] == '}' || c.d[c.i] == ']' {
		c.i = min(c.i+1, len(c.d))
		return false
	}
	return true
}

// EachMember calls f with the name of each member of the object at the cursor, escapes undone. f consumes the
// values it wants; the others are skipped. Anything but an object is consumed and has no members.
func (c *Cursor) EachMember(f func(name []byte)) {
	if !c.enter('{') {
		return
	}
	for {
		_, key, ok := c.member()
		if !ok {
			return
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(Unquote(key))
		}
		at := c.i
		if f(key); c.i == at {
			c.Value()
		}
	}
}
