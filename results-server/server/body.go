// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"encoding/json"
	"strings"
)

// A result's body_json is the source's own result, which the server stores as sent and the result page shows
// pretty-printed. Pretty-printing multiplies what nesting costs: each line is indented by its depth, so 20 KB of
// 9,999 nested arrays became a page of 190 MiB. Ingest bounds the nesting (nestsDeeper) and the page bounds
// what it prints (prettyBody), also for bodies stored before the bound.

// MaxBodyShown bounds the pretty-printed body_json on a result's page, in bytes before HTML escaping.
const MaxBodyShown = 256 << 10

// nestsDeeper reports whether s nests arrays and objects deeper than limit. It reads brackets outside strings
// and stops at the first one too deep, without decoding: s need not be valid JSON (ingest stores a body that is
// not as text).
func nestsDeeper(s string, limit int) bool {
	depth := 0
	var str stringScan
	for i := 0; i < len(s); i++ {
		c := s[i]
		if str.inside(c) {
			continue
		}
		switch c {
		case '[', '{':
			if depth++; depth > limit {
				return true
			}
		case ']', '}':
			depth = max(0, depth-1)
		}
	}
	return false
}

// prettyBody is body indented as json.Indent(body, "", "  ") would, but at most about limit bytes of it
// (truncated says the rest was left out): the output is written as the input is read, and the reading stops
// once the output is full. A body that is not valid JSON is shown as it is, cut at limit.
func prettyBody(body string, limit int) (shown string, truncated bool) {
	if !json.Valid([]byte(body)) {
		if len(body) > limit {
			return body[:limit], true
		}
		return body, false
	}
	var b strings.Builder
	depth := 0
	newline := func() {
		b.WriteByte('\n')
		for range depth {
			b.WriteString("  ")
		}
	}
	var str stringScan
	i := 0
	for ; i < len(body) && b.Len() < limit; i++ {
		c := body[i]
		if str.inside(c) {
			b.WriteByte(c)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '[', '{':
			b.WriteByte(c)
			// An empty array or object stays on its line, as json.Indent writes it.
			j := i + 1
			for j < len(body) && strings.IndexByte(" \t\n\r", body[j]) >= 0 {
				j++
			}
			if j < len(body) && (body[j] == ']' || body[j] == '}') {
				b.WriteByte(body[j])
				i = j
				continue
			}
			depth++
			newline()
		case ']', '}':
			depth--
			newline()
			b.WriteByte(c)
		case ',':
			b.WriteByte(c)
			newline()
		case ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), strings.TrimSpace(body[i:]) != ""
}

// stringScan follows whether the bytes of a JSON text are inside a string.
type stringScan struct{ in, escaped bool }

// inside reports whether c belongs to a string, its quotes included.
func (s *stringScan) inside(c byte) bool {
	switch {
	case s.escaped:
		s.escaped = false
	case s.in:
		s.escaped = c == '\\'
		s.in = c != '"'
	case c == '"':
		s.in = true
	default:
		return false
	}
	return true
}
