// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

// Bool reads v if it is true or false.
func Bool(v []byte) (value, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Strings reads validated v if it is an array of strings only.
func Strings(v []byte) ([]string, bool) {
	c := NewCursor(v)
	if !c.enter('[') {
		return nil, false
	}
	var out []string
	for c.next() {
		s, ok := String(c.Value())
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// Type names the type of a value by its first byte, for error messages.
func Type(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}
