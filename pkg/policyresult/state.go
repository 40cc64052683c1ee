// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import "fmt"

// State says why a result record was emitted: a watcher emits only results that appeared, changed outcome or
// went away, never the unchanged rest of a report.
type State string

const (
	StateNew      State = "new"
	StateChanged  State = "changed"
	StateResolved State = "resolved"
	// StateNone marks records that are not part of a change stream, such as a decision.
	StateNone State = ""
)

// ParseState accepts the values of AttrResultState.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case StateNew, StateChanged, StateResolved, StateNone:
		return st, nil
	}
	return "", fmt.Errorf("unknown policy result state %q: want new, changed or resolved", s)
}
