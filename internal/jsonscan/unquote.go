// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

import (
	"bytes"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// String decodes v if it is a validated JSON string.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	for i, c := range in {
		if c == '\\' || c >= utf8.RuneSelf {
			if c != '\\' && bytes.IndexByte(in[i:], '\\') < 0 && utf8.Valid(in[i:]) {
				break
			}
			return Unquote(in), true
		}
	}
	return string(in), true
}

// Unquote decodes the contents of a validated JSON string as encoding/json does: escapes undone, invalid UTF-8
// and unpaired surrogates replaced by U+FFFD, since record attributes and bodies must be valid UTF-8.
func Unquote(in []byte) string {
	b := make([]byte, 0, len(in))
	for r := 0; r < len(in); {
		c := in[r]
		switch {
		case c == '\\' && r+1 < len(in):
			switch e := in[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(in[r:])
				if rr < 0 {
					return string(b)
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(in[r:])); dec != unicode.ReplacementChar {
						b = utf8.AppendRune(b, dec)
						r += 6
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(in[r:])
			if rr == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
			} else {
				b = append(b, in[r:r+size]...)
			}
			r += size
		}
	}
	return string(b)
}

// getu4 decodes the \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		h := unhex(c)
		if h < 0 {
			return -1
		}
		r = r*16 + h
	}
	return r
}
