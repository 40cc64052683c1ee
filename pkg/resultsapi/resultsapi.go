// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package resultsapi converts between the result model (pkg/policyresult, log records) and the results
// forwarding API (proto/policyresults/v1), for the results_grpc exporter and the results server.
package resultsapi // import "github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// FromLogRecord converts a policy.result record. It fails, wrapping policyresult.ErrNotResult, on records of
// other events, and on records policyresult.ReadLogRecord rejects.
func FromLogRecord(res pcommon.Resource, lr plog.LogRecord) (*pb.Result, error) {
	r, err := policyresult.ReadLogRecord(res, lr)
	if err != nil {
		return nil, err
	}
	out := FromResult(&r)
	if ts := lr.ObservedTimestamp(); ts != 0 {
		out.ObservedTimestamp = timestamppb.New(ts.AsTime())
	}
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		out.BodyJson = string(recordjson.AppendValue(nil, body))
	}
	return out, nil
}

// FromResult converts a result of the model, with its key and id.
func FromResult(r *policyresult.Result) *pb.Result {
	out := &pb.Result{
		Key: r.Key(), Id: r.ID(), Cluster: r.Cluster,
		Source: r.Source, Policy: r.Policy, Rule: r.Rule, Category: r.Category,
		Severity: SeverityToProto(r.Severity), Outcome: OutcomeToProto(r.Outcome), Scored: r.Scored,
		Message: r.Message, State: StateToProto(r.State),
	}
	if !r.Resource.IsZero() {
		out.Resource = &pb.Resource{ApiVersion: r.Resource.APIVersion, Kind: r.Resource.Kind,
			Namespace: r.Resource.Namespace, Name: r.Resource.Name, Uid: r.Resource.UID}
	}
	if r.Report != (policyresult.Report{}) {
		out.Report = &pb.Report{Kind: r.Report.Kind, Namespace: r.Report.Namespace, Name: r.Report.Name}
	}
	if !r.Timestamp.IsZero() {
		out.Timestamp = timestamppb.New(r.Timestamp)
	}
	if v := r.Vulnerability; v != nil {
		out.Vulnerability = &pb.Vulnerability{Id: v.ID, Score: v.Score, ScoreVersion: v.ScoreVersion,
			Reference: v.Reference, PackageName: v.PackageName, PackageVersion: v.PackageVersion,
			PackageFixedVersion: v.PackageFixedVersion, PackagePath: v.PackagePath, PackageType: v.PackageType}
	}
	out.FailedChecks = r.FailedChecks
	return out
}

// ToResult converts back to the model, for a server that recomputes the key and id to check them.
func ToResult(in *pb.Result) policyresult.Result {
	r := policyresult.Result{
		Cluster: in.GetCluster(), Source: in.GetSource(), Policy: in.GetPolicy(), Rule: in.GetRule(),
		Category: in.GetCategory(), Severity: SeverityFromProto(in.GetSeverity()),
		Outcome: OutcomeFromProto(in.GetOutcome()), Scored: in.Scored, Message: in.GetMessage(),
		State: StateFromProto(in.GetState()),
	}
	if res := in.GetResource(); res != nil {
		r.Resource = policyresult.Resource{APIVersion: res.GetApiVersion(), Kind: res.GetKind(),
			Namespace: res.GetNamespace(), Name: res.GetName(), UID: res.GetUid()}
	}
	if rep := in.GetReport(); rep != nil {
		r.Report = policyresult.Report{Kind: rep.GetKind(), Namespace: rep.GetNamespace(), Name: rep.GetName()}
	}
	if in.GetTimestamp() != nil {
		r.Timestamp = in.GetTimestamp().AsTime()
	}
	if v := in.GetVulnerability(); v != nil {
		r.Vulnerability = &policyresult.Vulnerability{ID: v.GetId(), Score: v.Score, ScoreVersion: v.GetScoreVersion(),
			Reference: v.GetReference(), PackageName: v.GetPackageName(), PackageVersion: v.GetPackageVersion(),
			PackageFixedVersion: v.GetPackageFixedVersion(), PackagePath: v.GetPackagePath(), PackageType: v.GetPackageType()}
	}
	r.FailedChecks = in.FailedChecks
	return r
}
