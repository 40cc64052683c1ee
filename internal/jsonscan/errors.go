// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

import "fmt"

// SyntaxError locates invalid JSON; its messages follow encoding/json's.
type SyntaxError struct {
	// Offset is the byte at which the input stopped being valid, counted from the start of the slice scanned.
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

func errEOF(off int) error { return &SyntaxError{off, "unexpected end of input"} }

func errBadChar(off int, c byte, where string) error {
	return &SyntaxError{off, fmt.Sprintf("invalid character %q %s", c, where)}
}
