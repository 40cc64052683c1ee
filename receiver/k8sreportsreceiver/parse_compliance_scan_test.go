// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

var gvrComplianceScans = schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "compliancescans"}

// scanVersion is the scan of scan-done.yaml in a given phase and run.
func scanVersion(t *testing.T, phase, result string, index int, end string) *parse.Object {
	t.Helper()
	obj := parserFixture(t, gvrComplianceScans, "compliance/scan-done.yaml")
	var m map[string]any
	require.NoError(t, json.Unmarshal(obj.Raw, &m))
	status := m["status"].(map[string]any)
	status["phase"], status["result"], status["currentIndex"] = phase, result, index
	if end == "" {
		delete(status, "endTimestamp")
	} else {
		status["endTimestamp"] = end
	}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	obj, err = parse.DecodeObject(gvrComplianceScans, raw)
	require.NoError(t, err)
	return obj
}

// stepScan diffs one version of a scan against the state, as the emitter does, through the stored form of the
// state as a restart would read it.
func stepScan(t *testing.T, prev *emittedReport, obj *parse.Object) ([]outRecord, *emittedReport) {
	t.Helper()
	results, err := parse.ComplianceScan(obj, testBudget)
	require.NoError(t, err)
	recs, next := diff(prev, results, false, obj.Partial, true, "c1")
	stored, err := json.Marshal(next)
	require.NoError(t, err)
	back := &emittedReport{}
	require.NoError(t, json.Unmarshal(stored, back))
	return recs, back
}

// A scan emits one record per completed run: nothing while a rescan runs (and the last run stays), a record for
// the next run even when its verdict repeats, nothing when the same run is read again, and nothing when the
// scan is deleted, since a run that happened is not resolved.
func TestComplianceScanOneRecordPerRun(t *testing.T) {
	recs, state := stepScan(t, nil, scanVersion(t, "DONE", "NON-COMPLIANT", 2, "2025-05-01T01:04:41Z"))
	require.Len(t, recs, 1)
	first := recs[0].hashes
	assert.Equal(t, policyresult.StateNew, recs[0].State)
	assert.Equal(t, policyresult.OutcomeFail, recs[0].Outcome)

	recs, state = stepScan(t, state, scanVersion(t, "DONE", "NON-COMPLIANT", 2, "2025-05-01T01:04:41Z"))
	assert.Empty(t, recs, "the same run read again")

	for _, phase := range []string{"PENDING", "LAUNCHING", "RUNNING", "AGGREGATING"} {
		recs, state = stepScan(t, state, scanVersion(t, phase, "NOT-AVAILABLE", 3, ""))
		assert.Empty(t, recs, phase)
		require.Len(t, state.results, 1, "%s keeps the last completed run", phase)
	}

	recs, state = stepScan(t, state, scanVersion(t, "DONE", "NON-COMPLIANT", 3, "2025-05-02T01:04:12Z"))
	require.Len(t, recs, 1, "the next run, with the same verdict")
	assert.Equal(t, first.Key, recs[0].hashes.Key)
	assert.NotEqual(t, first.ID, recs[0].hashes.ID)

	recs, state = stepScan(t, state, scanVersion(t, "DONE", "COMPLIANT", 4, "2025-05-03T01:04:12Z"))
	require.Len(t, recs, 1)
	assert.Equal(t, policyresult.OutcomePass, recs[0].Outcome)

	recs, gone := diff(state, nil, true, false, true, "c1")
	assert.Empty(t, recs, "a deleted scan resolves nothing")
	assert.Nil(t, gone)
}

// The records of a scan and of a suite, as written: policy.scan events, keyed by the scan.
func TestComplianceScanRecords(t *testing.T) {
	for _, tt := range []struct {
		file     string
		resource string
		attrs    map[string]any
	}{{
		file: "compliance/scan-done.yaml", resource: "compliancescans",
		attrs: map[string]any{
			policyresult.AttrEventName: policyresult.EventScan, policyresult.AttrSource: "compliance-operator",
			policyresult.AttrPolicy: "ocp4-cis-node-worker", policyresult.AttrResult: "fail",
			policyresult.AttrMessage:    "NON-COMPLIANT",
			policyresult.AttrReportKind: "ComplianceScan", policyresult.AttrReportNamespace: "openshift-compliance",
			policyresult.AttrReportName: "ocp4-cis-node-worker",
			policyresult.AttrScanPhase:  "DONE", policyresult.AttrScanProfile: []any{"xccdf_org.ssgproject.content_profile_cis-node"},
			policyresult.AttrScanContent: "ssg-ocp4-ds.xml", policyresult.AttrScanType: "Node",
			policyresult.AttrScanSuite: "cis-compliance", policyresult.AttrScanIndex: int64(2),
			policyresult.AttrScanStartTime: "2025-05-01T01:00:03Z", policyresult.AttrScanChecks: int64(112),
		},
	}, {
		file: "compliance/suite-done.yaml", resource: "compliancesuites",
		attrs: map[string]any{
			policyresult.AttrEventName: policyresult.EventScan, policyresult.AttrSource: "compliance-operator",
			policyresult.AttrPolicy: "cis-compliance", policyresult.AttrResult: "fail", policyresult.AttrMessage: "NON-COMPLIANT",
			policyresult.AttrReportKind: "ComplianceSuite", policyresult.AttrReportNamespace: "openshift-compliance",
			policyresult.AttrReportName: "cis-compliance", policyresult.AttrScanPhase: "DONE",
			policyresult.AttrScanProfile:   []any{"xccdf_org.ssgproject.content_profile_cis", "xccdf_org.ssgproject.content_profile_cis-node"},
			policyresult.AttrScanStartTime: "2025-05-01T01:00:02Z", policyresult.AttrScanScansTotal: int64(2),
			policyresult.AttrScanScansPrefix + "pass": int64(1), policyresult.AttrScanScansPrefix + "fail": int64(1),
			policyresult.AttrScanScansPrefix + "warn": int64(0), policyresult.AttrScanScansPrefix + "error": int64(0),
			policyresult.AttrScanScansPrefix + "skip": int64(0),
		},
	}} {
		t.Run(tt.file, func(t *testing.T) {
			gvr := gvrComplianceScans
			gvr.Resource = tt.resource
			results, err := parse.ComplianceScan(parserFixture(t, gvr, tt.file), testBudget)
			require.NoError(t, err)
			require.Len(t, results, 1)
			recs, _ := diff(nil, results, false, false, true, "c1")
			ld := (&reportsReceiver{cfg: &Config{}}).toLogs(&batch{n: 1, parts: []batchPart{{item: &batchItem{records: recs}, to: 1}}})
			lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
			attrs := lr.Attributes().AsRaw()
			assert.Equal(t, recs[0].hashes.Key.String(), attrs[policyresult.AttrScanKey])
			assert.Equal(t, recs[0].hashes.ID.String(), attrs[policyresult.AttrScanID])
			delete(attrs, policyresult.AttrScanKey)
			delete(attrs, policyresult.AttrScanID)
			assert.Equal(t, tt.attrs, attrs)
			assert.Equal(t, "2025-05-01T01:04:41Z", lr.Timestamp().AsTime().Format("2006-01-02T15:04:05Z07:00"), "the end of the run")
		})
	}
}

// A suite's run is that of all its scans: one scan's next run is the suite's next run.
func TestComplianceSuiteRunIsItsScans(t *testing.T) {
	gvr := gvrComplianceScans
	gvr.Resource = "compliancesuites"
	parse := func(mutate func(map[string]any)) policyresult.Hashes {
		obj := parserFixture(t, gvr, "compliance/suite-done.yaml")
		var m map[string]any
		require.NoError(t, json.Unmarshal(obj.Raw, &m))
		mutate(m)
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		obj, err = parse.DecodeObject(gvr, raw)
		require.NoError(t, err)
		results, err := parse.ComplianceScan(obj, testBudget)
		require.NoError(t, err)
		require.Len(t, results, 1)
		return results[0].Hashes()
	}
	scans := func(m map[string]any) []any { return m["status"].(map[string]any)["scanStatuses"].([]any) }
	base := parse(func(map[string]any) {})
	reordered := parse(func(m map[string]any) { s := scans(m); s[0], s[1] = s[1], s[0] })
	assert.Equal(t, base, reordered, "the order of scanStatuses is not the run")
	next := parse(func(m map[string]any) {
		s := scans(m)[1].(map[string]any)
		s["currentIndex"], s["endTimestamp"] = 3, "2025-05-02T01:03:10Z"
	})
	assert.Equal(t, base.Key, next.Key)
	assert.NotEqual(t, base.ID, next.ID)
}
