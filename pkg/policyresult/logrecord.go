// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// WriteResource sets the resource attributes of the records of one cluster.
func WriteResource(res pcommon.Resource, cluster string) {
	if cluster != "" {
		res.Attributes().PutStr(AttrClusterName, cluster)
	}
}

// WriteLogRecord writes r into lr as a policy.result record (a policy.scan record when r.Scan is set): event name, severity, timestamp and every
// attribute of the model, including the computed key and ID. Empty optional fields are left out rather than
// written as empty strings. The body is the caller's: receivers put the source's own result there.
func WriteLogRecord(r *Result, lr plog.LogRecord) { WriteHashedLogRecord(r, r.Hashes(), lr) }

// WriteHashedLogRecord is WriteLogRecord with r's key and ID computed before (r.Hashes()), by a component that
// keeps them anyway: a result is hashed once on its way through.
func WriteHashedLogRecord(r *Result, h Hashes, lr plog.LogRecord) {
	if r.Scan != nil {
		writeScanRecord(r, h, lr)
		return
	}
	n := 20
	if r.Vulnerability != nil {
		n += 9
	}
	if r.FailedChecks != nil {
		n++
	}
	attrs := writeEvent(lr, EventResult, RecordSeverity(r.Outcome, r.Severity), r.Timestamp, n)
	putNonEmpty(attrs, AttrSource, r.Source)
	putNonEmpty(attrs, AttrPolicy, r.Policy)
	putNonEmpty(attrs, AttrRule, r.Rule)
	putNonEmpty(attrs, AttrCategory, r.Category)
	putNonEmpty(attrs, AttrSeverity, string(r.Severity))
	putNonEmpty(attrs, AttrResult, string(r.Outcome))
	if r.Scored != nil {
		attrs.PutBool(AttrScored, *r.Scored)
	}
	putNonEmpty(attrs, AttrMessage, r.Message)
	attrs.PutStr(AttrResultKey, h.Key.String())
	attrs.PutStr(AttrResultID, h.ID.String())
	putNonEmpty(attrs, AttrResultState, string(r.State))

	putNonEmpty(attrs, AttrResourceAPIVersion, r.Resource.APIVersion)
	putNonEmpty(attrs, AttrResourceKind, r.Resource.Kind)
	putNonEmpty(attrs, AttrResourceNamespace, r.Resource.Namespace)
	putNonEmpty(attrs, AttrResourceName, r.Resource.Name)
	putNonEmpty(attrs, AttrResourceUID, r.Resource.UID)

	putNonEmpty(attrs, AttrReportKind, r.Report.Kind)
	putNonEmpty(attrs, AttrReportNamespace, r.Report.Namespace)
	putNonEmpty(attrs, AttrReportName, r.Report.Name)

	if r.FailedChecks != nil {
		attrs.PutInt(AttrFailedChecks, *r.FailedChecks)
	}
	if v := r.Vulnerability; v != nil {
		writeVulnerability(attrs, v)
	}
}

func writeVulnerability(attrs pcommon.Map, v *Vulnerability) {
	putNonEmpty(attrs, AttrVulnerabilityID, v.ID)
	if v.Score != nil {
		attrs.PutDouble(AttrVulnerabilityScoreBase, *v.Score)
	}
	putNonEmpty(attrs, AttrVulnerabilityScoreVersion, v.ScoreVersion)
	putNonEmpty(attrs, AttrVulnerabilityReference, v.Reference)
	putNonEmpty(attrs, AttrPackageName, v.PackageName)
	putNonEmpty(attrs, AttrPackageVersion, v.PackageVersion)
	putNonEmpty(attrs, AttrPackageFixedVersion, v.PackageFixedVersion)
	putNonEmpty(attrs, AttrPackagePath, v.PackagePath)
	putNonEmpty(attrs, AttrPackageType, v.PackageType)
}

// readVulnerability is nil when the record has none of the vulnerability attributes.
func readVulnerability(attrs pcommon.Map) (*Vulnerability, error) {
	v := Vulnerability{
		ID:                  str(attrs, AttrVulnerabilityID),
		ScoreVersion:        str(attrs, AttrVulnerabilityScoreVersion),
		Reference:           str(attrs, AttrVulnerabilityReference),
		PackageName:         str(attrs, AttrPackageName),
		PackageVersion:      str(attrs, AttrPackageVersion),
		PackageFixedVersion: str(attrs, AttrPackageFixedVersion),
		PackagePath:         str(attrs, AttrPackagePath),
		PackageType:         str(attrs, AttrPackageType),
	}
	if s, ok := attrs.Get(AttrVulnerabilityScoreBase); ok {
		if s.Type() != pcommon.ValueTypeDouble {
			return nil, fmt.Errorf("attribute %s: want a double, got %s", AttrVulnerabilityScoreBase, s.Type())
		}
		score := s.Double()
		v.Score = &score
	}
	if v == (Vulnerability{}) {
		return nil, nil
	}
	return &v, nil
}

// writeEvent begins every record of the model: the event name, in the field and in the attribute (see
// AttrEventName), the severity, and the time when known. It returns the attributes, with room for n.
func writeEvent(lr plog.LogRecord, event string, sev plog.SeverityNumber, ts time.Time, n int) pcommon.Map {
	lr.SetEventName(event)
	lr.SetSeverityNumber(sev)
	lr.SetSeverityText(severityText(sev))
	if !ts.IsZero() {
		lr.SetTimestamp(pcommon.NewTimestampFromTime(ts))
	}
	attrs := lr.Attributes()
	attrs.EnsureCapacity(n)
	attrs.PutStr(AttrEventName, event)
	return attrs
}

// putStrings writes values as a string slice attribute.
func putStrings(attrs pcommon.Map, name string, values []string) {
	s := attrs.PutEmptySlice(name)
	s.EnsureCapacity(len(values))
	for _, v := range values {
		s.AppendEmpty().SetStr(v)
	}
}

func putNonEmpty(attrs pcommon.Map, name, value string) {
	if value != "" {
		attrs.PutStr(name, value)
	}
}

// ErrNotResult is returned by ReadLogRecord for records that are not policy.result records.
var ErrNotResult = errors.New("not a policy.result record")

// ReadLogRecord reads a result back from a record written by WriteLogRecord, possibly after processors changed
// it. It fails on records of another event, on values outside the vocabulary, and when the stored key no longer
// matches the identity attributes (a processor rewrote one of them without recomputing the key).
func ReadLogRecord(res pcommon.Resource, lr plog.LogRecord) (Result, error) {
	attrs := lr.Attributes()
	if event := EventName(lr); event != EventResult {
		return Result{}, fmt.Errorf("%w: event name %q", ErrNotResult, event)
	}

	r := readIdentity(res.Attributes(), attrs)
	r.Category = str(attrs, AttrCategory)
	r.Message = str(attrs, AttrMessage)
	if lr.Timestamp() != 0 {
		r.Timestamp = lr.Timestamp().AsTime()
	}
	if v, ok := attrs.Get(AttrScored); ok {
		if v.Type() != pcommon.ValueTypeBool {
			return Result{}, fmt.Errorf("attribute %s: want a bool, got %s", AttrScored, v.Type())
		}
		scored := v.Bool()
		r.Scored = &scored
	}

	var err error
	if r.FailedChecks, err = optionalInt(attrs, AttrFailedChecks); err != nil {
		return Result{}, err
	}
	if r.Vulnerability, err = readVulnerability(attrs); err != nil {
		return Result{}, err
	}
	if s, ok := attrs.Get(AttrResult); ok {
		if r.Outcome, err = ParseOutcome(s.AsString()); err != nil {
			return Result{}, fmt.Errorf("attribute %s: %w", AttrResult, err)
		}
	}
	if s := str(attrs, AttrSeverity); s != "" {
		if r.Severity = ParseSeverity(s); r.Severity == SeverityNone {
			return Result{}, fmt.Errorf("attribute %s: unknown severity %q", AttrSeverity, s)
		}
	}
	if r.State, err = ParseState(str(attrs, AttrResultState)); err != nil {
		return Result{}, fmt.Errorf("attribute %s: %w", AttrResultState, err)
	}
	if key := str(attrs, AttrResultKey); key != "" && key != r.Key() {
		return Result{}, fmt.Errorf("attribute %s is %s but the identity attributes give %s", AttrResultKey, key, r.Key())
	}
	return r, nil
}

// readIdentity reads the fields of a result's key: the cluster from the resource (res), the rest from the
// record (attrs).
func readIdentity(res, attrs pcommon.Map) Result {
	return Result{
		Cluster: str(res, AttrClusterName),
		Source:  str(attrs, AttrSource),
		Policy:  str(attrs, AttrPolicy),
		Rule:    str(attrs, AttrRule),
		Resource: Resource{
			APIVersion: str(attrs, AttrResourceAPIVersion),
			Kind:       str(attrs, AttrResourceKind),
			Namespace:  str(attrs, AttrResourceNamespace),
			Name:       str(attrs, AttrResourceName),
			UID:        str(attrs, AttrResourceUID),
		},
		Report: Report{
			Kind:      str(attrs, AttrReportKind),
			Namespace: str(attrs, AttrReportNamespace),
			Name:      str(attrs, AttrReportName),
		},
	}
}

// RecordKey is the key of a policy.result record (res its resource's attributes, attrs its own): its
// policy.result.key attribute when it has one, else the key of its identity attributes, as ReadLogRecord
// computes it. A producer sending plain OTLP may so leave both hashes out, and every component that keys
// results (the state of policy_aggregate and policy_metrics, Kafka's record key, results_grpc) keys its records
// alike. A record that names no policy has no identity to compute a key from.
func RecordKey(res, attrs pcommon.Map) (Hash, error) {
	if s := str(attrs, AttrResultKey); s != "" {
		h, ok := ParseHash(s)
		if !ok {
			return Hash{}, fmt.Errorf("attribute %s is %q, want 32 hexadecimal characters", AttrResultKey, s)
		}
		return h, nil
	}
	r := readIdentity(res, attrs)
	if r.Policy == "" {
		return Hash{}, fmt.Errorf("the record has neither %s nor %s to compute it from", AttrResultKey, AttrPolicy)
	}
	var buf [512]byte
	return sum(r.appendIdentity(buf[:0])), nil
}
