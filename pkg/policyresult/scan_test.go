// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

func scanResult() Result {
	index, checks := int64(2), int64(112)
	return Result{
		Cluster: "prod-eu-1", Source: "compliance-operator", Policy: "ocp4-cis-node-worker",
		Outcome: OutcomeFail, Message: "NON-COMPLIANT",
		Report:    Report{Kind: "ComplianceScan", Namespace: "openshift-compliance", Name: "ocp4-cis-node-worker"},
		Timestamp: time.Date(2025, 5, 1, 1, 4, 41, 0, time.UTC),
		Scan: &ScanRun{
			Run: "2 2025-05-01T01:04:41Z", Phase: "DONE", Profiles: []string{"xccdf_org.ssgproject.content_profile_cis-node"},
			Content: "ssg-ocp4-ds.xml", Type: "Node", Suite: "cis-compliance", Index: &index,
			StartTime: time.Date(2025, 5, 1, 1, 0, 3, 0, time.UTC), Checks: &checks,
		},
	}
}

func TestWriteScanRecord(t *testing.T) {
	r := scanResult()
	lr := firstRecord(newRecord(t, r))
	assert.Equal(t, EventScan, lr.EventName())
	assert.Equal(t, r.Timestamp, lr.Timestamp().AsTime())
	assert.Equal(t, map[string]any{
		AttrEventName: EventScan, AttrSource: "compliance-operator", AttrPolicy: "ocp4-cis-node-worker",
		AttrResult: "fail", AttrMessage: "NON-COMPLIANT", AttrScanKey: r.Key(), AttrScanID: r.ID(),
		AttrReportKind: "ComplianceScan", AttrReportNamespace: "openshift-compliance", AttrReportName: "ocp4-cis-node-worker",
		AttrScanPhase: "DONE", AttrScanProfile: []any{"xccdf_org.ssgproject.content_profile_cis-node"},
		AttrScanContent: "ssg-ocp4-ds.xml", AttrScanType: "Node", AttrScanSuite: "cis-compliance",
		AttrScanIndex: int64(2), AttrScanStartTime: "2025-05-01T01:00:03Z", AttrScanChecks: int64(112),
	}, lr.Attributes().AsRaw(), "no result key, ID or state: a run is an event of its own")
	assert.Equal(t, AttrScanKey, IdentityAttribute(EventScan))
}

func TestWriteSuiteRecordCountsScans(t *testing.T) {
	r := Result{Source: "compliance-operator", Policy: "cis-compliance", Outcome: OutcomeFail,
		Report: Report{Kind: "ComplianceSuite", Namespace: "openshift-compliance", Name: "cis-compliance"},
		Scan:   &ScanRun{Run: "x", Phase: "DONE", Scans: &ScanCounts{}}}
	r.Scan.Scans.Add(OutcomePass)
	r.Scan.Scans.Add(OutcomeFail)
	r.Scan.Scans.Add("")
	attrs := firstRecord(newRecord(t, r)).Attributes().AsRaw()
	assert.Equal(t, int64(3), attrs[AttrScanScansTotal])
	assert.Equal(t, int64(1), attrs[AttrScanScansPrefix+"pass"])
	assert.Equal(t, int64(1), attrs[AttrScanScansPrefix+"fail"])
	assert.Equal(t, int64(0), attrs[AttrScanScansPrefix+"error"])
}

// Every run of a scan has the scan's key and an ID of its own, even when the verdict repeats.
func TestScanRunIsInTheIDOnly(t *testing.T) {
	first, next := scanResult(), scanResult()
	next.Scan = &ScanRun{Run: "3 2025-05-02T01:04:40Z"}
	assert.Equal(t, first.Key(), next.Key())
	assert.NotEqual(t, first.ID(), next.ID())
	same := scanResult()
	same.Scan.Checks, same.Scan.Profiles = nil, nil
	assert.Equal(t, first.Hashes(), same.Hashes(), "only the run, verdict and message identify a run")
	plain := scanResult()
	plain.Scan = nil
	assert.Equal(t, first.Key(), plain.Key())
	assert.NotEqual(t, first.ID(), plain.ID())
}

func TestScanRoundTrip(t *testing.T) {
	suite := Result{Cluster: "c", Source: "compliance-operator", Policy: "cis-compliance", Outcome: OutcomeError,
		Message: "Timeout while waiting for the scan pod to be finished.",
		Report:  Report{Kind: "ComplianceSuite", Namespace: "openshift-compliance", Name: "cis-compliance"},
		Scan: &ScanRun{Phase: "DONE", Profiles: []string{"a", "b"},
			Scans: &ScanCounts{Total: 2, ByOutcome: [5]int64{1, 0, 0, 1, 0}}}}
	for name, r := range map[string]Result{"scan": scanResult(), "suite": suite} {
		t.Run(name, func(t *testing.T) {
			ld := throughTheWire(t, newRecord(t, r))
			got, err := ReadScanRecord(ld.ResourceLogs().At(0).Resource(), firstRecord(ld))
			require.NoError(t, err)
			want := r
			want.Scan = new(*r.Scan)
			want.Scan.Run = "" // only its hash is in the record
			assert.Equal(t, want, got)

			_, err = ReadLogRecord(ld.ResourceLogs().At(0).Resource(), firstRecord(ld))
			assert.ErrorIs(t, err, ErrNotResult)
		})
	}
	_, err := ReadScanRecord(newRecord(t, sampleResult()).ResourceLogs().At(0).Resource(), firstRecord(newRecord(t, sampleResult())))
	assert.ErrorIs(t, err, ErrNotScan)
}

func TestReadScanRecordRejects(t *testing.T) {
	for name, change := range map[string]func(plog.LogRecord){
		"renamed":      func(lr plog.LogRecord) { lr.Attributes().PutStr(AttrPolicy, "other") },
		"index string": func(lr plog.LogRecord) { lr.Attributes().PutStr(AttrScanIndex, "2") },
		"profile":      func(lr plog.LogRecord) { lr.Attributes().PutStr(AttrScanProfile, "cis") },
		"start time":   func(lr plog.LogRecord) { lr.Attributes().PutStr(AttrScanStartTime, "yesterday") },
		"outcome":      func(lr plog.LogRecord) { lr.Attributes().PutStr(AttrResult, "NON-COMPLIANT") },
	} {
		t.Run(name, func(t *testing.T) {
			ld := newRecord(t, scanResult())
			change(firstRecord(ld))
			_, err := ReadScanRecord(ld.ResourceLogs().At(0).Resource(), firstRecord(ld))
			assert.Error(t, err)
		})
	}
}
