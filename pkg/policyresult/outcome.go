// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"fmt"
	"strings"
)

// Outcome is the result vocabulary of the wgpolicyk8s.io PolicyReport API, which every source is mapped onto.
type Outcome string

const (
	OutcomePass  Outcome = "pass"
	OutcomeFail  Outcome = "fail"
	OutcomeWarn  Outcome = "warn"
	OutcomeError Outcome = "error"
	OutcomeSkip  Outcome = "skip"
)

// Outcomes lists the vocabulary in a fixed order, for components that keep one counter per outcome.
var Outcomes = []Outcome{OutcomePass, OutcomeFail, OutcomeWarn, OutcomeError, OutcomeSkip}

// ParseOutcome accepts the vocabulary in any letter case, since sources differ (Kyverno "pass", kube-bench
// "PASS"). Source-specific words (Compliance Operator's MANUAL, trivy's success flag) are mapped by the receiver
// that knows them, which keeps the original value in the record body.
func ParseOutcome(s string) (Outcome, error) {
	o := Outcome(strings.ToLower(strings.TrimSpace(s)))
	if o.Valid() {
		return o, nil
	}
	return "", fmt.Errorf("unknown policy result %q: want one of pass, fail, warn, error, skip", s)
}

// Valid reports whether o is one of the vocabulary's values.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomePass, OutcomeFail, OutcomeWarn, OutcomeError, OutcomeSkip:
		return true
	}
	return false
}
