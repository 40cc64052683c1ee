// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

import "bytes"

// objectIter walks the members of a validated object value.
type objectIter struct {
	c    Cursor
	open bool
}

// objectMembers iterates over v's members; a v that is not an object has none.
func objectMembers(v []byte) objectIter {
	it := objectIter{c: Cursor{d: v}}
	it.open = it.c.enter('{')
	return it
}

func (it *objectIter) next() (Member, bool) {
	if !it.open {
		return Member{}, false
	}
	start, key, ok := it.c.member()
	if !ok {
		it.open = false
		return Member{}, false
	}
	v := it.c.Value()
	return Member{Key: key, Escaped: bytes.IndexByte(key, '\\') >= 0, Start: start, End: it.c.i, Value: v}, true
}

// Lookup returns the value of the last member of validated object v named key. It compares keys as they are
// read, without building each Member: lookups in nested objects are most of a generic mapping's decoding.
func Lookup(v []byte, key string) ([]byte, bool) {
	var found []byte
	ok := false
	it := objectMembers(v)
	for it.open {
		_, k, more := it.c.member()
		if !more {
			break
		}
		value := it.c.Value()
		if keyIs(k, key) {
			found, ok = value, true
		}
	}
	return found, ok
}

// keyIs tells whether key k, as written, names name once its escapes are undone.
func keyIs(k []byte, name string) bool {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k) == name
	}
	return Unquote(k) == name
}

// MembersOf lists the members of validated object v, without their sizes; a v that is not an object has none.
func MembersOf(v []byte) Members {
	var ms Members
	for it := objectMembers(v); ; {
		m, ok := it.next()
		if !ok {
			return ms
		}
		ms = append(ms, m)
	}
}
