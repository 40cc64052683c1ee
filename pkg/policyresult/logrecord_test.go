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

func newRecord(t *testing.T, r Result) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	WriteResource(rl.Resource(), r.Cluster)
	WriteLogRecord(&r, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	return ld
}

// throughTheWire is ld after OTLP's protobuf encoding and decoding: what an exporter sends is what a receiver
// reads back.
func throughTheWire(t *testing.T, ld plog.Logs) plog.Logs {
	t.Helper()
	raw, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	ld, err = (&plog.ProtoUnmarshaler{}).UnmarshalLogs(raw)
	require.NoError(t, err)
	return ld
}

func firstRecord(ld plog.Logs) plog.LogRecord {
	return ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
}

func TestWriteLogRecordAttributes(t *testing.T) {
	r := sampleResult()
	r.Timestamp = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	ld := newRecord(t, r)
	lr := firstRecord(ld)

	assert.Equal(t, EventResult, lr.EventName())
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	assert.Equal(t, "WARN", lr.SeverityText())
	assert.Equal(t, r.Timestamp, lr.Timestamp().AsTime())
	assert.Equal(t, map[string]any{AttrClusterName: "prod-eu-1"}, ld.ResourceLogs().At(0).Resource().Attributes().AsRaw())
	assert.Equal(t, map[string]any{
		AttrEventName:          EventResult,
		AttrSource:             "kyverno",
		AttrPolicy:             "require-labels",
		AttrRule:               "check-team",
		AttrCategory:           "Best Practices",
		AttrSeverity:           "medium",
		AttrResult:             "fail",
		AttrScored:             true,
		AttrMessage:            "label 'team' is required",
		AttrResultKey:          goldenKey,
		AttrResultID:           goldenID,
		AttrResultState:        "new",
		AttrResourceAPIVersion: "v1",
		AttrResourceKind:       "Pod",
		AttrResourceNamespace:  "shop",
		AttrResourceName:       "cart-7d9f",
		AttrResourceUID:        "0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01",
		AttrReportKind:         "PolicyReport",
		AttrReportNamespace:    "shop",
		AttrReportName:         "0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01",
	}, lr.Attributes().AsRaw())
}

func TestWriteLogRecordLeavesOutEmptyFields(t *testing.T) {
	r := Result{Source: "kube-bench", Policy: "cis-1.8", Rule: "1.2.1", Outcome: OutcomePass,
		Report: Report{Kind: "ClusterPolicyReport", Name: "cis"}}
	lr := firstRecord(newRecord(t, r))
	assert.Equal(t, map[string]any{
		AttrEventName: EventResult, AttrSource: "kube-bench", AttrPolicy: "cis-1.8", AttrRule: "1.2.1",
		AttrResult: "pass", AttrResultKey: r.Key(), AttrResultID: r.ID(),
		AttrReportKind: "ClusterPolicyReport", AttrReportName: "cis",
	}, lr.Attributes().AsRaw())
	assert.Zero(t, lr.Timestamp())
}

func vulnerableResult() Result {
	score, failed := 7.5, int64(0)
	return Result{Source: "trivy-operator", Policy: "CVE-2026-0001", Rule: "nginx/openssl", Severity: SeverityHigh,
		Outcome: OutcomeFail, Message: "buffer overflow", FailedChecks: &failed,
		Resource: Resource{Kind: "ReplicaSet", Namespace: "shop", Name: "web-6d4cf56db6"},
		Vulnerability: &Vulnerability{ID: "CVE-2026-0001", Score: &score, ScoreVersion: "3",
			Reference: "https://avd.aquasec.com/nvd/cve-2026-0001", PackageName: "openssl", PackageVersion: "3.0.1",
			PackageFixedVersion: "3.0.2, 3.1.1", PackagePath: "usr/lib/libssl.so.3", PackageType: "debian"}}
}

func TestWriteLogRecordVulnerabilityAndChecks(t *testing.T) {
	r := vulnerableResult()
	lr := firstRecord(newRecord(t, r))
	assert.Equal(t, map[string]any{
		AttrEventName: EventResult, AttrSource: "trivy-operator", AttrPolicy: "CVE-2026-0001", AttrRule: "nginx/openssl",
		AttrSeverity: "high", AttrResult: "fail", AttrMessage: "buffer overflow",
		AttrResultKey: r.Key(), AttrResultID: r.ID(),
		AttrResourceKind: "ReplicaSet", AttrResourceNamespace: "shop", AttrResourceName: "web-6d4cf56db6",
		AttrFailedChecks:              int64(0),
		AttrVulnerabilityID:           "CVE-2026-0001",
		AttrVulnerabilityScoreBase:    7.5,
		AttrVulnerabilityScoreVersion: "3",
		AttrVulnerabilityReference:    "https://avd.aquasec.com/nvd/cve-2026-0001",
		AttrPackageName:               "openssl",
		AttrPackageVersion:            "3.0.1",
		AttrPackageFixedVersion:       "3.0.2, 3.1.1",
		AttrPackagePath:               "usr/lib/libssl.so.3",
		AttrPackageType:               "debian",
	}, lr.Attributes().AsRaw())
}

func TestVulnerabilityAndChecksAreNotIdentity(t *testing.T) {
	r := vulnerableResult()
	plain := r
	plain.Vulnerability, plain.FailedChecks = nil, nil
	assert.Equal(t, plain.Hashes(), r.Hashes(), "a fix version published later must not change the key or the ID")
}

func TestRoundTrip(t *testing.T) {
	notScored := false
	full := sampleResult()
	full.Timestamp = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for name, r := range map[string]Result{
		"full":       full,
		"minimal":    {Outcome: OutcomeSkip},
		"vulnerable": vulnerableResult(),
		"no score":   {Outcome: OutcomeFail, Vulnerability: &Vulnerability{ID: "GHSA-xxxx", PackageName: "lodash"}},
		"not scored": {Source: "kube-bench", Scored: &notScored, Outcome: OutcomeWarn, State: StateResolved},
		"no cluster": {Source: "trivy-operator", Policy: "CVE-2026-0001", Severity: SeverityCritical, Outcome: OutcomeFail,
			Resource: Resource{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "kube-system", Name: "coredns-5d78c9869d"}},
	} {
		t.Run(name, func(t *testing.T) {
			ld := throughTheWire(t, newRecord(t, r))

			got, err := ReadLogRecord(ld.ResourceLogs().At(0).Resource(), firstRecord(ld))
			require.NoError(t, err)
			assert.Equal(t, r, got)
		})
	}
}

func TestReadLogRecordRejects(t *testing.T) {
	for name, tt := range map[string]struct {
		mutate func(plog.LogRecord)
		want   string
	}{
		"other event": {func(lr plog.LogRecord) {
			lr.SetEventName(EventDecision)
		}, "not a policy.result record"},
		"bad outcome": {func(lr plog.LogRecord) {
			lr.Attributes().PutStr(AttrResult, "MANUAL")
		}, `attribute policy.result: unknown policy result "MANUAL"`},
		"bad severity": {func(lr plog.LogRecord) {
			lr.Attributes().PutStr(AttrSeverity, "urgent")
		}, `unknown severity "urgent"`},
		"bad state": {func(lr plog.LogRecord) {
			lr.Attributes().PutStr(AttrResultState, "gone")
		}, `unknown policy result state "gone"`},
		"scored not bool": {func(lr plog.LogRecord) {
			lr.Attributes().PutStr(AttrScored, "yes")
		}, "attribute policy.scored: want a bool, got Str"},
		"score not double": {func(lr plog.LogRecord) {
			lr.Attributes().PutStr(AttrVulnerabilityScoreBase, "7.5")
		}, "attribute vulnerability.score.base: want a double, got Str"},
		"failed checks not int": {func(lr plog.LogRecord) {
			lr.Attributes().PutDouble(AttrFailedChecks, 2)
		}, "attribute policy.checks.failed: want an int, got Double"},
		"identity rewritten": {func(lr plog.LogRecord) {
			lr.Attributes().PutStr(AttrResourceName, "renamed")
		}, "attribute policy.result.key is " + goldenKey},
	} {
		t.Run(name, func(t *testing.T) {
			ld := newRecord(t, sampleResult())
			lr := firstRecord(ld)
			tt.mutate(lr)
			_, err := ReadLogRecord(ld.ResourceLogs().At(0).Resource(), lr)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestReadLogRecordFromAttributeOnly(t *testing.T) {
	// Records from an older SDK or a transform may carry the event name only as an attribute.
	ld := newRecord(t, sampleResult())
	lr := firstRecord(ld)
	lr.SetEventName("")
	got, err := ReadLogRecord(ld.ResourceLogs().At(0).Resource(), lr)
	require.NoError(t, err)
	assert.Equal(t, "require-labels", got.Policy)
}

func BenchmarkWriteLogRecord(b *testing.B) {
	r := sampleResult()
	lrs := plog.NewLogRecordSlice()
	b.ReportAllocs()
	for b.Loop() {
		lrs.RemoveIf(func(plog.LogRecord) bool { return true })
		WriteLogRecord(&r, lrs.AppendEmpty())
	}
}

// TestRecordKey: the key attribute when there is one, else the key of the identity attributes, the same as the
// receivers write and ReadLogRecord computes, so that a producer may leave the hashes out.
func TestRecordKey(t *testing.T) {
	ld := newRecord(t, sampleResult())
	res, lr := ld.ResourceLogs().At(0).Resource(), firstRecord(ld)
	written, err := RecordKey(res.Attributes(), lr.Attributes())
	require.NoError(t, err)
	assert.Equal(t, goldenKey, written.String())

	lr.Attributes().Remove(AttrResultKey)
	lr.Attributes().Remove(AttrResultID)
	computed, err := RecordKey(res.Attributes(), lr.Attributes())
	require.NoError(t, err)
	assert.Equal(t, written, computed, "computed from the identity attributes")
	read, err := ReadLogRecord(res, lr)
	require.NoError(t, err)
	assert.Equal(t, computed.String(), read.Key())

	// The cluster is the resource's: another cluster, another key.
	res.Attributes().PutStr(AttrClusterName, "elsewhere")
	other, err := RecordKey(res.Attributes(), lr.Attributes())
	require.NoError(t, err)
	assert.NotEqual(t, computed, other)

	lr.Attributes().PutStr(AttrResultKey, "not-a-hash")
	_, err = RecordKey(res.Attributes(), lr.Attributes())
	assert.ErrorContains(t, err, `attribute policy.result.key is "not-a-hash"`)

	lr.Attributes().Remove(AttrResultKey)
	lr.Attributes().Remove(AttrPolicy)
	_, err = RecordKey(res.Attributes(), lr.Attributes())
	assert.ErrorContains(t, err, "neither policy.result.key nor policy.name")
}
