// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestGatekeeperOutcome(t *testing.T) {
	for _, tt := range []struct {
		action string
		scoped []string
		want   policyresult.Outcome
	}{
		{"deny", nil, policyresult.OutcomeFail},
		{"warn", nil, policyresult.OutcomeWarn},
		{"dryrun", nil, policyresult.OutcomeWarn},
		{"Deny", nil, policyresult.OutcomeFail},
		{"scoped", []string{"dryrun"}, policyresult.OutcomeWarn},
		{"scoped", []string{"warn", "deny"}, policyresult.OutcomeFail},
		{"scoped", []string{"deny", "warn"}, policyresult.OutcomeFail},
		{"scoped", []string{"custom"}, policyresult.OutcomeFail},
		{"scoped", nil, policyresult.OutcomeFail},
		{"", nil, policyresult.OutcomeFail},
	} {
		assert.Equal(t, tt.want, gatekeeperOutcome(tt.action, tt.scoped), "%q %v", tt.action, tt.scoped)
	}
}
