// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const gatekeeperSource = "gatekeeper"

type gatekeeperConstraint struct {
	Status struct {
		AuditTimestamp string `json:"auditTimestamp"`
		// Violations holds at most --constraint-violations-limit entries (20 by default) of the last audit run;
		// totalViolations may be larger. A violation past the cap is therefore indistinguishable from a resolved
		// one here.
		Violations      []json.RawMessage `json:"violations"`
		TotalViolations *int              `json:"totalViolations"`
	} `json:"status"`
}

type gatekeeperViolation struct {
	EnforcementAction string `json:"enforcementAction"`
	// EnforcementActions lists the actions that apply to audit when enforcementAction is "scoped".
	EnforcementActions []string `json:"enforcementActions"`
	Group              string   `json:"group"`
	Version            string   `json:"version"`
	Kind               string   `json:"kind"`
	Namespace          string   `json:"namespace"`
	Name               string   `json:"name"`
	Message            string   `json:"message"`
}

// GatekeeperConstraint emits one failing or warning result per audit violation listed in a constraint's
// status. The policy is the constraint kind (one per ConstraintTemplate), the rule the constraint. Passing
// resources are not listed, so a constraint without violations yields no results and a fixed resource shows
// up as a result that disappears. Gatekeeper has no severity.
func GatekeeperConstraint(obj *Object, budget Budget) ([]Result, error) {
	var c gatekeeperConstraint
	if err := json.Unmarshal(obj.Raw, &c); err != nil {
		return nil, err
	}
	f := fanout{budget: budget}
	if !f.addEntries(c.Status.Violations) {
		return nil, f.err()
	}
	ts := parseRFC3339(c.Status.AuditTimestamp)
	// Past the cap the list is a sample: a violation missing from it is not resolved.
	obj.Partial = c.Status.TotalViolations != nil && *c.Status.TotalViolations > len(c.Status.Violations)

	out := make([]Result, 0, len(c.Status.Violations))
	for i, raw := range c.Status.Violations {
		var v gatekeeperViolation
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("status.violations[%d]: %w", i, err)
		}
		out = append(out, Result{Body: WholeBody(raw), Result: policyresult.Result{
			Source:  gatekeeperSource,
			Policy:  obj.Kind,
			Rule:    obj.Metadata.Name,
			Outcome: gatekeeperOutcome(v.EnforcementAction, v.EnforcementActions),
			Message: v.Message,
			Resource: policyresult.Resource{
				APIVersion: gatekeeperAPIVersion(v.Group, v.Version),
				Kind:       v.Kind,
				Namespace:  v.Namespace,
				Name:       v.Name,
			},
			Report:    obj.Report(),
			Timestamp: ts,
		}})
	}
	// One template can report a resource several times with different messages (one per offending container,
	// say); they share policy, rule and subject, and the message tells them apart.
	return disambiguateBy(out, gatekeeperDiscriminator), nil
}

// gatekeeperOutcome maps the enforcement action the violation was audited under. deny is a failure; warn and
// dryrun report without blocking admission, which is what warn means in the result vocabulary. A scoped
// action takes the strongest of the actions listed for it, and is a failure when none is known. Anything
// else, including an empty or unknown action, is still a listed violation and so a failure.
func gatekeeperOutcome(action string, scoped []string) policyresult.Outcome {
	switch strings.ToLower(action) {
	case "warn", "dryrun":
		return policyresult.OutcomeWarn
	case "scoped":
		out := policyresult.OutcomeFail
		for _, a := range scoped {
			switch strings.ToLower(a) {
			case "deny":
				return policyresult.OutcomeFail
			case "warn", "dryrun":
				out = policyresult.OutcomeWarn
			}
		}
		return out
	}
	return policyresult.OutcomeFail
}

// gatekeeperAPIVersion joins the violation's group and version. Older Gatekeeper releases wrote violations
// with neither; the apiVersion is then left empty rather than guessed, since "v1" would be wrong for every
// non-core kind.
func gatekeeperAPIVersion(group, version string) string {
	switch {
	case version == "":
		return ""
	case group == "":
		return version
	}
	return group + "/" + version
}

func gatekeeperDiscriminator(body []byte) []byte {
	var v gatekeeperViolation
	if json.Unmarshal(body, &v) != nil {
		return body
	}
	return []byte(v.Message)
}
