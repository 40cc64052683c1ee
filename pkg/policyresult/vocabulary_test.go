// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

func TestParseOutcome(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Outcome
	}{
		{"pass", OutcomePass}, {"PASS", OutcomePass}, {" Fail ", OutcomeFail},
		{"warn", OutcomeWarn}, {"error", OutcomeError}, {"Skip", OutcomeSkip},
	} {
		got, err := ParseOutcome(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"", "MANUAL", "passed", "ok"} {
		_, err := ParseOutcome(bad)
		assert.ErrorContains(t, err, "unknown policy result", bad)
	}
	assert.Len(t, Outcomes, 5)
	for _, o := range Outcomes {
		assert.True(t, o.Valid())
	}
}

func TestParseSeverity(t *testing.T) {
	for in, want := range map[string]Severity{
		"critical": SeverityCritical, "CRITICAL": SeverityCritical, "High": SeverityHigh,
		"medium": SeverityMedium, "moderate": SeverityMedium, "LOW": SeverityLow,
		"info": SeverityInfo, "informational": SeverityInfo,
		"": SeverityNone, "unknown": SeverityNone, "UNKNOWN": SeverityNone, "urgent": SeverityNone,
	} {
		assert.Equal(t, want, ParseSeverity(in), in)
	}
}

func TestSeverityNumbers(t *testing.T) {
	for s, want := range map[Severity]plog.SeverityNumber{
		SeverityCritical: plog.SeverityNumberFatal,
		SeverityHigh:     plog.SeverityNumberError,
		SeverityMedium:   plog.SeverityNumberWarn,
		SeverityLow:      plog.SeverityNumberInfo2,
		SeverityInfo:     plog.SeverityNumberInfo,
		SeverityNone:     plog.SeverityNumberUnspecified,
	} {
		assert.Equal(t, want, s.SeverityNumber(), string(s))
	}
}

func TestRecordSeverity(t *testing.T) {
	for _, tt := range []struct {
		o    Outcome
		s    Severity
		want plog.SeverityNumber
	}{
		{OutcomeFail, SeverityCritical, plog.SeverityNumberFatal},
		{OutcomeFail, SeverityHigh, plog.SeverityNumberError},
		{OutcomeFail, SeverityLow, plog.SeverityNumberInfo2},
		{OutcomeFail, SeverityNone, plog.SeverityNumberWarn},
		// A pass is information whatever the policy's severity.
		{OutcomePass, SeverityCritical, plog.SeverityNumberInfo},
		{OutcomeWarn, SeverityCritical, plog.SeverityNumberWarn},
		{OutcomeError, SeverityNone, plog.SeverityNumberError},
		{OutcomeSkip, SeverityHigh, plog.SeverityNumberDebug},
		{"", SeverityHigh, plog.SeverityNumberUnspecified},
	} {
		assert.Equal(t, tt.want, RecordSeverity(tt.o, tt.s), "%s/%s", tt.o, tt.s)
	}
}

func TestParseState(t *testing.T) {
	for _, s := range []State{StateNew, StateChanged, StateResolved, StateNone} {
		got, err := ParseState(string(s))
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	_, err := ParseState("deleted")
	assert.ErrorContains(t, err, `unknown policy result state "deleted"`)
}
