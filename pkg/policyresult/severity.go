// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
)

// Severity is the importance a policy assigns to its result, independent of the outcome.
type Severity string

const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
	SeverityInfo     Severity = "info"
	// SeverityNone is a result without a (known) severity; the attribute is then left out.
	SeverityNone Severity = ""
)

// ParseSeverity maps the spellings of the sources onto the vocabulary: trivy's upper case, the Compliance
// Operator's "unknown", and the common synonyms. Anything else is SeverityNone; the receiver keeps the original
// value in the record body.
func ParseSeverity(s string) Severity {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "critical":
		return SeverityCritical
	case "high":
		return SeverityHigh
	case "medium", "moderate":
		return SeverityMedium
	case "low":
		return SeverityLow
	case "info", "informational":
		return SeverityInfo
	}
	return SeverityNone
}

// SeverityNumber maps a policy severity onto the OpenTelemetry log severity scale.
func (s Severity) SeverityNumber() plog.SeverityNumber {
	switch s {
	case SeverityCritical:
		return plog.SeverityNumberFatal
	case SeverityHigh:
		return plog.SeverityNumberError
	case SeverityMedium:
		return plog.SeverityNumberWarn
	case SeverityLow:
		return plog.SeverityNumberInfo2
	case SeverityInfo:
		return plog.SeverityNumberInfo
	}
	return plog.SeverityNumberUnspecified
}

// RecordSeverity is the severity of the log record that carries a result. Only a failure carries the policy's
// severity: a passing check of a critical policy is not a fatal log line. A failure without a severity is a
// warning, an evaluation error an error, a pass information and a skip debug detail.
func RecordSeverity(o Outcome, s Severity) plog.SeverityNumber {
	switch o {
	case OutcomeFail:
		if n := s.SeverityNumber(); n != plog.SeverityNumberUnspecified {
			return n
		}
		return plog.SeverityNumberWarn
	case OutcomeWarn:
		return plog.SeverityNumberWarn
	case OutcomeError:
		return plog.SeverityNumberError
	case OutcomePass:
		return plog.SeverityNumberInfo
	case OutcomeSkip:
		return plog.SeverityNumberDebug
	}
	return plog.SeverityNumberUnspecified
}

// severityText is the short name of the OpenTelemetry severity range that n falls in.
func severityText(n plog.SeverityNumber) string {
	switch {
	case n >= plog.SeverityNumberFatal:
		return "FATAL"
	case n >= plog.SeverityNumberError:
		return "ERROR"
	case n >= plog.SeverityNumberWarn:
		return "WARN"
	case n >= plog.SeverityNumberInfo:
		return "INFO"
	case n >= plog.SeverityNumberDebug:
		return "DEBUG"
	case n >= plog.SeverityNumberTrace:
		return "TRACE"
	}
	return ""
}
