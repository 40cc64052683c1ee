// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

type clusterComplianceReport struct {
	Spec struct {
		Compliance struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"compliance"`
	} `json:"spec"`
	Status struct {
		UpdateTimestamp string `json:"updateTimestamp"`
		SummaryReport   *struct {
			ID           string            `json:"id"`
			Title        string            `json:"title"`
			ControlCheck []json.RawMessage `json:"controlCheck"`
		} `json:"summaryReport"`
		DetailReport *struct {
			ID      string            `json:"id"`
			Title   string            `json:"title"`
			Results []json.RawMessage `json:"results"`
		} `json:"detailReport"`
	} `json:"status"`
}

// complianceControl is a control of either form: the summary form counts its failing checks in totalFail,
// the detail form lists them.
type complianceControl struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Severity  string `json:"severity"`
	TotalFail *int64 `json:"totalFail"`
	Checks    []struct {
		Success *bool `json:"success"`
	} `json:"checks"`
}

// ClusterComplianceReport emits one result per control of a compliance spec (CIS, NSA, PSS), from the
// status trivy-operator writes on each run in one of two forms (spec.reportType): summary, with the number
// of failing checks per control, or detail, with the failing checks themselves. Both forms give the same
// results: a control fails when it has a failing check, passes when it has none, and a manual control (one
// trivy cannot evaluate, and whose name says "Manual") is skipped, as the Compliance Operator's MANUAL is.
//
// The report is about the cluster as a whole and names no subject; the key is the report's, and is the same in
// both forms, so switching the report type emits nothing when nothing changed. The number of failing checks
// is in the message too, so that a control that fails more, or less, is a changed result.
func ClusterComplianceReport(obj *Object, budget Budget) ([]Result, error) {
	var rep clusterComplianceReport
	if err := json.Unmarshal(obj.Raw, &rep); err != nil {
		return nil, err
	}
	st := &rep.Status
	// The operator writes one form at a time; should both be there, the detail form carries the evidence.
	var policy, title, field string
	var controls []json.RawMessage
	detail := st.DetailReport != nil
	switch {
	case detail:
		policy, title, field, controls = st.DetailReport.ID, st.DetailReport.Title, "status.detailReport.results", st.DetailReport.Results
	case st.SummaryReport != nil:
		policy, title, field, controls = st.SummaryReport.ID, st.SummaryReport.Title, "status.summaryReport.controlCheck", st.SummaryReport.ControlCheck
	default:
		// Created by Helm, not yet run.
		return nil, nil
	}
	policy = firstNonEmpty(policy, rep.Spec.Compliance.ID, obj.Metadata.Name)
	category := firstNonEmpty(rep.Spec.Compliance.Title, title)
	ts := parseRFC3339(st.UpdateTimestamp)

	f := fanout{budget: budget}
	if !f.addEntries(controls) {
		return nil, f.err()
	}
	out := make([]Result, 0, len(controls))
	for i, raw := range controls {
		var c complianceControl
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		pr := Result{Body: WholeBody(raw), Result: policyresult.Result{
			Source:    trivySource,
			Policy:    policy,
			Rule:      c.ID,
			Category:  category,
			Severity:  policyresult.ParseSeverity(c.Severity),
			Outcome:   policyresult.OutcomeSkip,
			Message:   firstNonEmpty(c.Name, c.ID),
			Report:    obj.Report(),
			Timestamp: ts,
		}}
		if failed, evaluated := c.failedChecks(detail); evaluated {
			pr.FailedChecks = &failed
			pr.Outcome = policyresult.OutcomePass
			if failed > 0 {
				pr.Outcome = policyresult.OutcomeFail
				pr.Message += ": " + strconv.FormatInt(failed, 10) + " failed"
			}
		}
		out = append(out, pr)
	}
	return Disambiguate(out), nil
}

// failedChecks counts the control's failing checks; evaluated is false for a manual control. The detail form
// lists every failing check with success false, and gives a control without findings one check with success
// true; trivy leaves totalFail out of the summary form for controls whose name says "Manual", and the detail
// form is read by the same rule, so that both forms agree.
func (c *complianceControl) failedChecks(detail bool) (failed int64, evaluated bool) {
	if !detail {
		if c.TotalFail == nil {
			return 0, false
		}
		return *c.TotalFail, true
	}
	if strings.Contains(c.Name, "Manual") {
		return 0, false
	}
	for _, ch := range c.Checks {
		if ch.Success != nil && !*ch.Success {
			failed++
		}
	}
	return failed, true
}
