// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const (
	// complianceCheckCountAnnotation is the number of check results a scan run produced, set by the operator
	// just before the run is DONE and removed when a rescan starts.
	complianceCheckCountAnnotation = "compliance.openshift.io/check-count"
	// complianceDone is the phase of a completed run; every other phase (PENDING, LAUNCHING, RUNNING,
	// AGGREGATING) is a run in progress.
	complianceDone = "DONE"
)

// complianceScanStatus is a ComplianceScan's status, also the shape of each of a suite's scanStatuses.
type complianceScanStatus struct {
	Name   string `json:"name"`
	Phase  string `json:"phase"`
	Result string `json:"result"`
	// ErrorMessage is spelled errormsg on scans (and errorMessage on suites).
	ErrorMessage   string `json:"errormsg"`
	CurrentIndex   *int64 `json:"currentIndex"`
	StartTimestamp string `json:"startTimestamp"`
	EndTimestamp   string `json:"endTimestamp"`
}

// run identifies one completed run as "index@end": the run counter, and the end time, which tells runs apart
// even where the counter does not (a scan deleted and created again starts at 0). Neither contains "@" or ",".
func (s *complianceScanStatus) run() string {
	index := ""
	if s.CurrentIndex != nil {
		index = strconv.FormatInt(*s.CurrentIndex, 10)
	}
	return index + "@" + s.EndTimestamp
}

type complianceScan struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		ScanType     string `json:"scanType"`
		Profile      string `json:"profile"`
		Content      string `json:"content"`
		ContentImage string `json:"contentImage"`
	} `json:"spec"`
	Status complianceScanStatus `json:"status"`
}

type complianceSuite struct {
	Spec struct {
		Scans []struct {
			Profile string `json:"profile"`
		} `json:"scans"`
	} `json:"spec"`
	Status struct {
		Phase        string                 `json:"phase"`
		Result       string                 `json:"result"`
		ErrorMessage string                 `json:"errorMessage"`
		ScanStatuses []complianceScanStatus `json:"scanStatuses"`
	} `json:"status"`
}

// ComplianceScan emits one policy.scan record per completed run of a ComplianceScan or ComplianceSuite:
// the verdict a fleet owner checks first, next to the check results of the run. A run in progress emits
// nothing and keeps the last completed run as it was (the report is partial), so that a rescan does not
// resolve the verdict it will replace. The policy is the scan's name, which its check results carry too.
func ComplianceScan(obj *Object, budget Budget) ([]Result, error) {
	var (
		r     policyresult.Result
		phase string
	)
	if obj.GVR.Resource == "compliancesuites" {
		var suite complianceSuite
		if err := json.Unmarshal(obj.Raw, &suite); err != nil {
			return nil, err
		}
		phase, r = suite.Status.Phase, suiteRun(&suite)
	} else {
		var scan complianceScan
		if err := json.Unmarshal(obj.Raw, &scan); err != nil {
			return nil, err
		}
		phase, r = scan.Status.Phase, scanRun(obj, &scan)
	}
	if !strings.EqualFold(phase, complianceDone) {
		obj.Partial = true
		return nil, nil
	}
	body, err := objectBody(obj.Raw, budget)
	if err != nil {
		return nil, err
	}
	r.Source, r.Policy, r.Report = complianceSource, obj.Metadata.Name, obj.Report()
	r.Scan.Phase = complianceDone
	return []Result{{Result: r, Body: body}}, nil
}

func scanRun(obj *Object, scan *complianceScan) policyresult.Result {
	st := &scan.Status
	run := &policyresult.ScanRun{
		Run: st.run(), Content: firstNonEmpty(scan.Spec.Content, scan.Spec.ContentImage), Type: scan.Spec.ScanType,
		Suite: obj.Metadata.Labels[complianceSuiteLabel], Index: st.CurrentIndex,
		StartTime: parseRFC3339(st.StartTimestamp),
	}
	if scan.Spec.Profile != "" {
		run.Profiles = []string{scan.Spec.Profile}
	}
	if n, err := strconv.ParseInt(scan.Metadata.Annotations[complianceCheckCountAnnotation], 10, 64); err == nil {
		run.Checks = &n
	}
	return policyresult.Result{
		Outcome: complianceScanOutcome(st.Result), Message: firstNonEmpty(st.ErrorMessage, st.Result),
		Timestamp: parseRFC3339(st.EndTimestamp), Scan: run,
	}
}

// suiteRun is the run of every scan of the suite: its ID is made of theirs, its start the earliest start
// and its end the latest end.
func suiteRun(suite *complianceSuite) policyresult.Result {
	st := &suite.Status
	run := &policyresult.ScanRun{Scans: &policyresult.ScanCounts{}}
	for _, s := range suite.Spec.Scans {
		if s.Profile != "" && !slices.Contains(run.Profiles, s.Profile) {
			run.Profiles = append(run.Profiles, s.Profile)
		}
	}
	scans := slices.Clone(st.ScanStatuses)
	slices.SortFunc(scans, func(a, b complianceScanStatus) int { return strings.Compare(a.Name, b.Name) })
	var id strings.Builder
	var end time.Time
	for i := range scans {
		s := &scans[i]
		if i > 0 {
			id.WriteByte(',')
		}
		// Scan names are DNS names: no "=", "@" or ",".
		id.WriteString(s.Name + "=" + s.run())
		run.Scans.Add(complianceScanOutcome(s.Result))
		if t := parseRFC3339(s.StartTimestamp); !t.IsZero() && (run.StartTime.IsZero() || t.Before(run.StartTime)) {
			run.StartTime = t
		}
		if t := parseRFC3339(s.EndTimestamp); t.After(end) {
			end = t
		}
	}
	run.Run = id.String()
	return policyresult.Result{
		Outcome: complianceScanOutcome(st.Result), Message: firstNonEmpty(st.ErrorMessage, st.Result),
		Timestamp: end, Scan: run,
	}
}

// complianceScanOutcome maps a scan's or suite's result. ERROR, NOT-APPLICABLE and INCONSISTENT are the words
// of the check statuses, with the same meaning; NOT-AVAILABLE (a run in progress) keeps no outcome.
func complianceScanOutcome(result string) policyresult.Outcome {
	switch strings.ToUpper(strings.TrimSpace(result)) {
	case "COMPLIANT":
		return policyresult.OutcomePass
	case "NON-COMPLIANT":
		return policyresult.OutcomeFail
	case "ERROR", "NOT-APPLICABLE", "INCONSISTENT":
		return complianceCheckOutcome(result)
	}
	return ""
}
