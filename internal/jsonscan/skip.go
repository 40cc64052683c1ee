// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

// The functions in this file and the Cursor walk values that a scan has validated, so they skip rather than
// check. They still stop at the end of their slice on any input, so that a mistake can cost a wrong value, never
// a panic.

// Skip returns the end of the validated value at d[i].
func Skip(d []byte, i int) int {
	if i >= len(d) {
		return len(d)
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for {
			for i < len(d) && !structural[d[i]] {
				i++
			}
			if i >= len(d) {
				return len(d)
			}
			switch d[i] {
			case '"':
				i = skipString(d, i)
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
	for i < len(d) && !valueEnd[d[i]] {
		i++
	}
	return i
}

var (
	// structural marks what a skip through a container must look at.
	structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}
	// valueEnd marks what can follow a number or literal.
	valueEnd = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}
)

// skipString returns the end of the validated string whose opening quote is at d[i].
func skipString(d []byte, i int) int {
	j := i + 1
	for {
		if j = nextStringStop(d, j, false); j >= len(d) {
			return len(d)
		}
		if d[j] == '"' {
			return j + 1
		}
		j += 2
	}
}
