// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

// IsSpace tells whether c is JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the offset of the first byte from i on that is not whitespace, or len(d).
func SkipSpace(d []byte, i int) int {
	for i < len(d) && IsSpace(d[i]) {
		i++
	}
	return i
}
