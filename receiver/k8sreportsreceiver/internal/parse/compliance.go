// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"strings"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const complianceSource = "compliance-operator"

const (
	complianceScanLabel  = "compliance.openshift.io/scan-name"
	complianceSuiteLabel = "compliance.openshift.io/suite"
	// complianceLastScannedAnnotation is set on every check result by Compliance Operator releases since
	// 2024, in RFC 3339. creationTimestamp is no substitute: a result object is created by the first scan and
	// updated in place by every later one.
	complianceLastScannedAnnotation = "compliance.openshift.io/last-scanned-timestamp"
)

// complianceCheckResult is a ComplianceCheckResult: one object per rule per scan, with the result at the top
// level rather than under status.
type complianceCheckResult struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	ID           string `json:"id"`
	Status       string `json:"status"`
	Severity     string `json:"severity"`
	Description  string `json:"description"`
	Instructions string `json:"instructions"`
}

// ComplianceCheckResult emits the one result of a check. The policy is the scan (named after the
// profile and node role, e.g. ocp4-cis-node-master) or, for checks without a scan label, the suite; the rule
// is the XCCDF rule ID. Checks are about the cluster or its nodes, not one object, so there is no subject and
// the check result object itself identifies the result, which is unique per scan and rule.
func ComplianceCheckResult(obj *Object, budget Budget) ([]Result, error) {
	var ccr complianceCheckResult
	if err := json.Unmarshal(obj.Raw, &ccr); err != nil {
		return nil, err
	}
	body, err := objectBody(obj.Raw, budget)
	if err != nil {
		return nil, err
	}
	return []Result{{Body: body, Result: policyresult.Result{
		Source:   complianceSource,
		Policy:   compliancePolicy(obj),
		Rule:     firstNonEmpty(ccr.ID, obj.Metadata.Name),
		Severity: policyresult.ParseSeverity(ccr.Severity),
		Outcome:  complianceCheckOutcome(ccr.Status),
		// The description's first line is the rule's title; checks without a description (MANUAL ones in
		// particular) still tell the user what to verify.
		Message:   firstNonEmpty(firstLine(ccr.Description), strings.TrimSpace(ccr.Instructions)),
		Report:    obj.Report(),
		Timestamp: parseRFC3339(ccr.Metadata.Annotations[complianceLastScannedAnnotation]),
	}}}, nil
}

// complianceCheckOutcome maps the operator's check statuses; anything else keeps no outcome. The body keeps
// the original status either way.
func complianceCheckOutcome(status string) policyresult.Outcome {
	switch strings.ToUpper(strings.TrimSpace(status)) {
	case "PASS":
		return policyresult.OutcomePass
	case "FAIL":
		return policyresult.OutcomeFail
	case "INFO":
		// XCCDF "informational": the check ran and its output is information for the auditor, not a compliance
		// verdict. It does not make the scan NON-COMPLIANT, so counting it as a failure (or a warning) would
		// contradict the operator's own verdict, and skip would claim it did not run.
		return policyresult.OutcomePass
	case "MANUAL":
		// The rule has no automated check; a human has to verify it, so it was not evaluated.
		return policyresult.OutcomeSkip
	case "ERROR":
		return policyresult.OutcomeError
	case "NOT-APPLICABLE", "NOTAPPLICABLE":
		// The operator writes NOT-APPLICABLE; its documentation spells it NOTAPPLICABLE.
		return policyresult.OutcomeSkip
	case "INCONSISTENT":
		// Nodes of one pool disagree: some fail, some pass. Not a clean failure of the pool, but not a pass.
		return policyresult.OutcomeWarn
	}
	return ""
}

type complianceRemediation struct {
	Spec struct {
		Current struct {
			// Object is the payload the operator would apply: normally a whole Kubernetes object. It is
			// nullable, and MachineConfig payloads carry no name (the operator names them when it applies them).
			Object *struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			} `json:"object"`
		} `json:"current"`
	} `json:"spec"`
	Status struct {
		ApplicationState string `json:"applicationState"`
		ErrorMessage     string `json:"errorMessage"`
	} `json:"status"`
}

// ComplianceRemediation emits one result per remediation: whether the fix the scan proposed is in
// effect. The failing check itself is reported by its ComplianceCheckResult, which has the same name; the
// remediation result is about the fix, with the object it would create or change as the subject.
func ComplianceRemediation(obj *Object, budget Budget) ([]Result, error) {
	var rem complianceRemediation
	if err := json.Unmarshal(obj.Raw, &rem); err != nil {
		return nil, err
	}
	body, err := objectBody(obj.Raw, budget)
	if err != nil {
		return nil, err
	}
	r := policyresult.Result{
		Source:  complianceSource,
		Policy:  compliancePolicy(obj),
		Rule:    obj.Metadata.Name,
		Outcome: complianceRemediationOutcome(rem.Status.ApplicationState),
		// The state is the message when there is no error, so that states sharing an outcome (Outdated and
		// NeedsReview are both warn) are still different results to the user.
		Message: firstNonEmpty(rem.Status.ErrorMessage, rem.Status.ApplicationState),
		Report:  obj.Report(),
	}
	// A payload without kind and name names no object a user could look up; the remediation then identifies
	// the result, as a cluster-wide result would.
	if o := rem.Spec.Current.Object; o != nil && o.Kind != "" && o.Metadata.Name != "" {
		r.Resource = policyresult.Resource{
			APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name,
		}
	}
	return []Result{{Result: r, Body: body}}, nil
}

// complianceRemediationOutcome maps status.applicationState. Only an applied fix passes. A fix that is not
// (yet) in effect is a warning rather than a failure, because the violation it would fix is already counted
// as a failure by its check result; counting it twice would double every compliance failure. A state the
// operator may add later keeps no outcome.
func complianceRemediationOutcome(state string) policyresult.Outcome {
	switch state {
	case "Applied":
		return policyresult.OutcomePass
	case "Error":
		return policyresult.OutcomeError
	case "NotApplied", // proposed, waiting for an administrator to set spec.apply
		"Pending",             // apply requested, not yet done
		"Outdated",            // applied, but a newer scan proposes a different fix
		"MissingDependencies", // depends on other rules or objects that are not in place
		"NeedsReview":         // the fix needs a variable the administrator has not set
		return policyresult.OutcomeWarn
	}
	return ""
}

// compliancePolicy is the scan the object belongs to, or its suite when the scan label is missing.
func compliancePolicy(obj *Object) string {
	return firstNonEmpty(obj.Metadata.Labels[complianceScanLabel], obj.Metadata.Labels[complianceSuiteLabel])
}

// objectBody is the body of the one record of an object that is one result.
func objectBody(raw []byte, budget Budget) (Body, error) {
	text, err := withoutMetadata(raw)
	if err != nil {
		return Body{}, err
	}
	f := fanout{budget: budget}
	if !f.add(1, int64(len(text))) {
		return Body{}, f.err()
	}
	return WholeBody(text), nil
}

// withoutMetadata is the object's JSON for the record body: metadata (managedFields, ownerReferences, labels
// that repeat the result) is noise there, while the source's own fields are kept as written.
func withoutMetadata(raw []byte) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	delete(fields, "metadata")
	return json.Marshal(fields)
}

func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}
