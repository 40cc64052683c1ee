// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

import (
	"encoding/binary"
	"math/bits"
)

// Strings are where events spend their bytes, so they are crossed 8 bytes at a time: stringStops returns a mask
// with the high bit set in the bytes of w that are a quote, a backslash or (with controls) a control character.
// (x - 0x01…) &^ x & 0x80… flags the zero bytes of x, (x - 0x20…) &^ x & 0x80… those below 0x20; a borrow can
// flag a byte above a true one, never below, so the lowest flag is always right.
func stringStops(w uint64, controls bool) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	m := (quote-ones)&^quote | (backslash-ones)&^backslash
	if controls {
		m |= (w - ones*0x20) &^ w
	}
	return m & highs
}

// nextStringStop returns the offset of the first byte from j on that stringStops flags, or len(d).
func nextStringStop(d []byte, j int, controls bool) int {
	for ; j+8 <= len(d); j += 8 {
		if m := stringStops(binary.LittleEndian.Uint64(d[j:]), controls); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(d); j++ {
		if c := d[j]; c == '"' || c == '\\' || (controls && c < 0x20) {
			return j
		}
	}
	return j
}

// ScanString validates the string whose opening quote is at d[i], and returns its end and whether it has
// escapes. Like encoding/json it does not check UTF-8: invalid sequences are valid JSON and decode to U+FFFD.
func ScanString(d []byte, i int) (int, bool, error) {
	esc := false
	j := i + 1
	for {
		if j = nextStringStop(d, j, true); j >= len(d) {
			return j, esc, errEOF(j)
		}
		switch c := d[j]; c {
		case '"':
			return j + 1, esc, nil
		case '\\':
			esc = true
			if j+1 >= len(d) {
				return j + 1, esc, errEOF(j + 1)
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(d) {
						return k, esc, errEOF(k)
					}
					if unhex(d[k]) < 0 {
						return k, esc, errBadChar(k, d[k], "in \\u hexadecimal character escape")
					}
				}
				j += 6
			default:
				return j + 1, esc, errBadChar(j+1, d[j+1], "in string escape code")
			}
		default:
			return j, esc, errBadChar(j, c, "in string literal")
		}
	}
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}
