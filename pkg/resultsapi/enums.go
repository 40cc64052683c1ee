// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsapi // import "github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"

import (
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

var (
	outcomes = map[policyresult.Outcome]pb.Outcome{
		policyresult.OutcomePass: pb.Outcome_OUTCOME_PASS, policyresult.OutcomeFail: pb.Outcome_OUTCOME_FAIL,
		policyresult.OutcomeWarn: pb.Outcome_OUTCOME_WARN, policyresult.OutcomeError: pb.Outcome_OUTCOME_ERROR,
		policyresult.OutcomeSkip: pb.Outcome_OUTCOME_SKIP,
	}
	severities = map[policyresult.Severity]pb.Severity{
		policyresult.SeverityInfo: pb.Severity_SEVERITY_INFO, policyresult.SeverityLow: pb.Severity_SEVERITY_LOW,
		policyresult.SeverityMedium: pb.Severity_SEVERITY_MEDIUM, policyresult.SeverityHigh: pb.Severity_SEVERITY_HIGH,
		policyresult.SeverityCritical: pb.Severity_SEVERITY_CRITICAL,
	}
	states = map[policyresult.State]pb.State{
		policyresult.StateNew: pb.State_STATE_NEW, policyresult.StateChanged: pb.State_STATE_CHANGED,
		policyresult.StateResolved: pb.State_STATE_RESOLVED,
	}
)

// OutcomeToProto maps an outcome; no outcome is OUTCOME_UNSPECIFIED.
func OutcomeToProto(o policyresult.Outcome) pb.Outcome { return outcomes[o] }

// OutcomeFromProto maps back; values unknown to this version are no outcome.
func OutcomeFromProto(o pb.Outcome) policyresult.Outcome { return reverse(outcomes, o) }

// SeverityToProto maps a severity; none is SEVERITY_UNSPECIFIED.
func SeverityToProto(s policyresult.Severity) pb.Severity { return severities[s] }

// SeverityFromProto maps back; values unknown to this version are no severity.
func SeverityFromProto(s pb.Severity) policyresult.Severity { return reverse(severities, s) }

// StateToProto maps a change state; none is STATE_UNSPECIFIED.
func StateToProto(s policyresult.State) pb.State { return states[s] }

// StateFromProto maps back; values unknown to this version are no state.
func StateFromProto(s pb.State) policyresult.State { return reverse(states, s) }

func reverse[K comparable, V comparable](m map[K]V, v V) K {
	for k, mv := range m {
		if mv == v {
			return k
		}
	}
	var zero K
	return zero
}
