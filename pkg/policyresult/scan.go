// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Log record attributes of policy.scan records (Result.Scan).
const (
	// AttrScanKey identifies the scan (the object that runs it), like AttrResultKey a result: every run of one
	// scan has the same key.
	AttrScanKey = "policy.scan.key"
	// AttrScanID identifies one run of the scan, so that re-deliveries of a run can be told from the next run.
	AttrScanID = "policy.scan.id"

	AttrScanPhase     = "policy.scan.phase"
	AttrScanProfile   = "policy.scan.profile"
	AttrScanContent   = "policy.scan.content"
	AttrScanType      = "policy.scan.type"
	AttrScanSuite     = "policy.scan.suite"
	AttrScanIndex     = "policy.scan.index"
	AttrScanStartTime = "policy.scan.start_time"
	AttrScanChecks    = "policy.scan.checks"

	// AttrScanScansTotal and the attributes under AttrScanScansPrefix count the scans of a suite run, by the
	// outcome of each scan.
	AttrScanScansTotal  = "policy.scan.scans.total"
	AttrScanScansPrefix = "policy.scan.scans."
)

// ScanRun is one completed run of a scan: a compliance scan of a profile, or a suite of such scans. A Result
// with a ScanRun is written as a policy.scan record rather than a policy.result record. Its Outcome is the
// scan's verdict, its Message the source's error or verdict word, its Report the object that runs the scan,
// and its Timestamp the end of the run. Empty fields are unknown to the source.
type ScanRun struct {
	// Run identifies the run among the runs of its scan. The ID hashes it, so that every run has its own ID
	// even when its verdict and message repeat the run before.
	Run string

	Phase    string
	Profiles []string
	Content  string
	Type     string
	Suite    string
	// Index is the source's counter of the scan's runs; nil when it has none.
	Index     *int64
	StartTime time.Time
	// Checks is the number of checks the run evaluated; nil when the source does not say.
	Checks *int64
	// Scans counts the scans of a suite by outcome; nil for a single scan.
	Scans *ScanCounts
}

// ScanCounts are the scans of a suite run: Total, and those of each outcome.
type ScanCounts struct {
	Total     int64
	ByOutcome [5]int64 // in the order of Outcomes
}

// Add counts one scan with outcome o (none when "").
func (c *ScanCounts) Add(o Outcome) {
	c.Total++
	for i, each := range Outcomes {
		if each == o {
			c.ByOutcome[i]++
		}
	}
}

// writeScanRecord writes a policy.scan record: the result's own attributes that apply to a run, the scan key
// and run ID instead of the result key and ID, and no change state, since every run is an event of its own.
func writeScanRecord(r *Result, h Hashes, lr plog.LogRecord) {
	s := r.Scan
	attrs := writeEvent(lr, EventScan, RecordSeverity(r.Outcome, r.Severity), r.Timestamp, 24)
	putNonEmpty(attrs, AttrSource, r.Source)
	putNonEmpty(attrs, AttrPolicy, r.Policy)
	putNonEmpty(attrs, AttrResult, string(r.Outcome))
	putNonEmpty(attrs, AttrMessage, r.Message)
	attrs.PutStr(AttrScanKey, h.Key.String())
	attrs.PutStr(AttrScanID, h.ID.String())
	putNonEmpty(attrs, AttrReportKind, r.Report.Kind)
	putNonEmpty(attrs, AttrReportNamespace, r.Report.Namespace)
	putNonEmpty(attrs, AttrReportName, r.Report.Name)

	putNonEmpty(attrs, AttrScanPhase, s.Phase)
	if len(s.Profiles) > 0 {
		putStrings(attrs, AttrScanProfile, s.Profiles)
	}
	putNonEmpty(attrs, AttrScanContent, s.Content)
	putNonEmpty(attrs, AttrScanType, s.Type)
	putNonEmpty(attrs, AttrScanSuite, s.Suite)
	if s.Index != nil {
		attrs.PutInt(AttrScanIndex, *s.Index)
	}
	if !s.StartTime.IsZero() {
		attrs.PutStr(AttrScanStartTime, s.StartTime.UTC().Format(time.RFC3339Nano))
	}
	if s.Checks != nil {
		attrs.PutInt(AttrScanChecks, *s.Checks)
	}
	if c := s.Scans; c != nil {
		attrs.PutInt(AttrScanScansTotal, c.Total)
		for i, o := range Outcomes {
			attrs.PutInt(AttrScanScansPrefix+string(o), c.ByOutcome[i])
		}
	}
}

// ErrNotScan is returned by ReadScanRecord for records that are not policy.scan records.
var ErrNotScan = fmt.Errorf("not a %s record", EventScan)

// ReadScanRecord reads a scan run back from a record written by WriteLogRecord for a Result with a Scan. The
// run ID is not readable from the attributes (only its hash is), so Scan.Run is empty. It fails on records of
// another event, on values outside the vocabulary, and when the stored key no longer matches the identity
// attributes.
func ReadScanRecord(res pcommon.Resource, lr plog.LogRecord) (Result, error) {
	if event := EventName(lr); event != EventScan {
		return Result{}, fmt.Errorf("%w: event name %q", ErrNotScan, event)
	}
	attrs := lr.Attributes()
	r := Result{
		Cluster: str(res.Attributes(), AttrClusterName),
		Source:  str(attrs, AttrSource),
		Policy:  str(attrs, AttrPolicy),
		Message: str(attrs, AttrMessage),
		Report: Report{
			Kind:      str(attrs, AttrReportKind),
			Namespace: str(attrs, AttrReportNamespace),
			Name:      str(attrs, AttrReportName),
		},
		Scan: &ScanRun{
			Phase:   str(attrs, AttrScanPhase),
			Content: str(attrs, AttrScanContent),
			Type:    str(attrs, AttrScanType),
			Suite:   str(attrs, AttrScanSuite),
		},
	}
	if lr.Timestamp() != 0 {
		r.Timestamp = lr.Timestamp().AsTime()
	}
	var err error
	if s, ok := attrs.Get(AttrResult); ok {
		if r.Outcome, err = ParseOutcome(s.AsString()); err != nil {
			return Result{}, fmt.Errorf("attribute %s: %w", AttrResult, err)
		}
	}
	if err := readScanRun(attrs, r.Scan); err != nil {
		return Result{}, err
	}
	if key := str(attrs, AttrScanKey); key != "" && key != r.Key() {
		return Result{}, fmt.Errorf("attribute %s is %s but the identity attributes give %s", AttrScanKey, key, r.Key())
	}
	return r, nil
}

func readScanRun(attrs pcommon.Map, s *ScanRun) error {
	if v, ok := attrs.Get(AttrScanProfile); ok {
		if v.Type() != pcommon.ValueTypeSlice {
			return fmt.Errorf("attribute %s: want a slice, got %s", AttrScanProfile, v.Type())
		}
		for _, p := range v.Slice().All() {
			s.Profiles = append(s.Profiles, p.AsString())
		}
	}
	var err error
	if s.Index, err = optionalInt(attrs, AttrScanIndex); err != nil {
		return err
	}
	if s.Checks, err = optionalInt(attrs, AttrScanChecks); err != nil {
		return err
	}
	if t := str(attrs, AttrScanStartTime); t != "" {
		if s.StartTime, err = time.Parse(time.RFC3339Nano, t); err != nil {
			return fmt.Errorf("attribute %s: %w", AttrScanStartTime, err)
		}
	}
	total, err := optionalInt(attrs, AttrScanScansTotal)
	if err != nil || total == nil {
		return err
	}
	s.Scans = &ScanCounts{Total: *total}
	for i, o := range Outcomes {
		n, err := optionalInt(attrs, AttrScanScansPrefix+string(o))
		if err != nil {
			return err
		}
		if n != nil {
			s.Scans.ByOutcome[i] = *n
		}
	}
	return nil
}

// optionalInt is nil when the attribute is missing, and an error when it is not an int.
func optionalInt(attrs pcommon.Map, name string) (*int64, error) {
	v, ok := attrs.Get(name)
	if !ok {
		return nil, nil
	}
	if v.Type() != pcommon.ValueTypeInt {
		return nil, fmt.Errorf("attribute %s: want an int, got %s", name, v.Type())
	}
	n := v.Int()
	return &n, nil
}
