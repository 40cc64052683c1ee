// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestComplianceCheckOutcome(t *testing.T) {
	for status, want := range map[string]policyresult.Outcome{
		"PASS":           policyresult.OutcomePass,
		"FAIL":           policyresult.OutcomeFail,
		"INFO":           policyresult.OutcomePass,
		"MANUAL":         policyresult.OutcomeSkip,
		"ERROR":          policyresult.OutcomeError,
		"NOT-APPLICABLE": policyresult.OutcomeSkip,
		"NOTAPPLICABLE":  policyresult.OutcomeSkip,
		"INCONSISTENT":   policyresult.OutcomeWarn,
		"fail":           policyresult.OutcomeFail,
		"":               "",
		"SKIPPED":        "",
	} {
		assert.Equal(t, want, complianceCheckOutcome(status), "status %q", status)
	}
}

func TestComplianceRemediationOutcome(t *testing.T) {
	for state, want := range map[string]policyresult.Outcome{
		"Applied":             policyresult.OutcomePass,
		"NotApplied":          policyresult.OutcomeWarn,
		"Pending":             policyresult.OutcomeWarn,
		"Outdated":            policyresult.OutcomeWarn,
		"MissingDependencies": policyresult.OutcomeWarn,
		"NeedsReview":         policyresult.OutcomeWarn,
		"Error":               policyresult.OutcomeError,
		"":                    "",
		"Unknown":             "",
	} {
		assert.Equal(t, want, complianceRemediationOutcome(state), "state %q", state)
	}
}
