// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

func sample() policyresult.Result {
	scored := true
	return policyresult.Result{
		Cluster: "prod-eu-1", Source: "kyverno", Policy: "require-labels", Rule: "check-team", Category: "Best Practices",
		Severity: policyresult.SeverityMedium, Outcome: policyresult.OutcomeFail, Scored: &scored,
		Message:  "label 'team' is required",
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart", UID: "u-1"},
		Report:   policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "u-1"},
		State:    policyresult.StateChanged, Timestamp: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
	}
}

func TestFromLogRecord(t *testing.T) {
	r := sample()
	res := pcommon.NewResource()
	policyresult.WriteResource(res, r.Cluster)
	lr := plog.NewLogRecord()
	policyresult.WriteLogRecord(&r, lr)
	observed := time.Date(2026, 11, 22, 8, 0, 1, 0, time.UTC)
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	body := lr.Body().SetEmptyMap()
	body.PutStr("result", "fail")
	body.PutStr("policy", "require-labels")

	got, err := FromLogRecord(res, lr)
	require.NoError(t, err)
	scored := true
	want := &pb.Result{
		Key: r.Key(), Id: r.ID(), Cluster: "prod-eu-1", Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Category: "Best Practices", Severity: pb.Severity_SEVERITY_MEDIUM, Outcome: pb.Outcome_OUTCOME_FAIL,
		Scored: &scored, Message: "label 'team' is required",
		Resource:          &pb.Resource{ApiVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart", Uid: "u-1"},
		Report:            &pb.Report{Kind: "PolicyReport", Namespace: "shop", Name: "u-1"},
		State:             pb.State_STATE_CHANGED,
		Timestamp:         timestamppb.New(r.Timestamp),
		ObservedTimestamp: timestamppb.New(observed),
		BodyJson:          `{"result":"fail","policy":"require-labels"}`,
	}
	assert.True(t, proto.Equal(want, got), "got %v", got)
	assert.Equal(t, r, ToResult(got), "the model survives the round trip")
}

func TestFromLogRecordRejectsOtherRecords(t *testing.T) {
	lr := plog.NewLogRecord()
	policyresult.WriteDecisionLogRecord(&policyresult.Decision{ID: "d"}, lr)
	_, err := FromLogRecord(pcommon.NewResource(), lr)
	assert.ErrorIs(t, err, policyresult.ErrNotResult)
}

func TestEnumsRoundTrip(t *testing.T) {
	for _, o := range append(policyresult.Outcomes, "") {
		assert.Equal(t, o, OutcomeFromProto(OutcomeToProto(o)))
	}
	for _, s := range []policyresult.Severity{policyresult.SeverityInfo, policyresult.SeverityLow, policyresult.SeverityMedium,
		policyresult.SeverityHigh, policyresult.SeverityCritical, policyresult.SeverityNone} {
		assert.Equal(t, s, SeverityFromProto(SeverityToProto(s)))
	}
	for _, s := range []policyresult.State{policyresult.StateNew, policyresult.StateChanged, policyresult.StateResolved, policyresult.StateNone} {
		assert.Equal(t, s, StateFromProto(StateToProto(s)))
	}
	assert.Equal(t, policyresult.Outcome(""), OutcomeFromProto(pb.Outcome(99)), "values of a newer API version are no outcome")
}

// A vulnerability finding and a compliance control carry their fields through the API and back, outside the
// key and id.
func TestFindingFieldsRoundTrip(t *testing.T) {
	score, failed := 9.8, int64(3)
	r := sample()
	r.Source, r.Policy, r.Rule = "trivy", "CVE-2024-3094", ""
	r.Vulnerability = &policyresult.Vulnerability{ID: "CVE-2024-3094", Score: &score, ScoreVersion: "3.1",
		Reference: "https://avd.aquasec.com/nvd/cve-2024-3094", PackageName: "xz-utils", PackageVersion: "5.6.0-0.2",
		PackageFixedVersion: "5.6.1+really5.4.5-1", PackagePath: "usr/lib", PackageType: "debian"}
	r.FailedChecks = &failed
	got := FromResult(&r)
	assert.True(t, proto.Equal(&pb.Vulnerability{Id: "CVE-2024-3094", Score: &score, ScoreVersion: "3.1",
		Reference: "https://avd.aquasec.com/nvd/cve-2024-3094", PackageName: "xz-utils", PackageVersion: "5.6.0-0.2",
		PackageFixedVersion: "5.6.1+really5.4.5-1", PackagePath: "usr/lib", PackageType: "debian"}, got.GetVulnerability()),
		"got %v", got.GetVulnerability())
	assert.Equal(t, int64(3), got.GetFailedChecks())
	assert.Equal(t, r, ToResult(got))

	plain := r
	plain.Vulnerability, plain.FailedChecks = nil, nil
	assert.Equal(t, plain.Key(), r.Key(), "the fields stay out of the key")
	assert.Equal(t, plain.ID(), r.ID(), "and out of the id")
	assert.Nil(t, FromResult(&plain).Vulnerability)
	assert.Nil(t, FromResult(&plain).FailedChecks)
}
