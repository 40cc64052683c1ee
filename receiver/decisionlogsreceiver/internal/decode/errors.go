// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
)

// ErrNotDecision marks events that are well formed but are no decision, such as Gatekeeper's audit_started or
// constraint_audited log lines, so that a caller tailing a mixed log can skip them instead of counting them as
// malformed.
var ErrNotDecision = errors.New("not a decision event")

// notDecisionError is an ErrNotDecision with a message of its own.
type notDecisionError string

func (e notDecisionError) Error() string      { return string(e) }
func (notDecisionError) Is(target error) bool { return target == ErrNotDecision }

// fieldTypeError says what a field holds instead of what it should.
func fieldTypeError(field, want string, v []byte) error {
	return fmt.Errorf("%s: want %s, got %s", field, want, jsonscan.Type(v))
}

// quoteShort quotes s for an error message, cut so that a huge field cannot make a huge log line.
func quoteShort(s string) string {
	const maxLen = 64
	if len(s) > maxLen {
		return strconv.Quote(s[:maxLen]) + "…"
	}
	return strconv.Quote(s)
}
