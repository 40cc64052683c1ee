// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// Reasons of the rejections in a ForwardResponse. They are part of what clients and their operators see, so
// they only change with care.
const (
	ReasonNoResult       = "result is empty"
	ReasonNoKey          = "key is missing"
	ReasonNoID           = "id is missing"
	ReasonKeyMismatch    = "key does not match the result's identity"
	ReasonIDMismatch     = "id does not match the result's identity, outcome and message"
	ReasonNoCluster      = "cluster is missing: set it on the result or as " + policyresult.AttrClusterName + " in extra_metadata"
	ReasonNUL            = "a text field contains a NUL character"
	ReasonBadScore       = "vulnerability score is not a finite number"
	reasonUnknownOutcome = "outcome %d is unknown to this server"
	reasonBadTimestamp   = "%s is out of range"
	reasonMetadataKeys   = "extra_metadata has %d keys, more than this server's limit of %d"
	reasonMetadataBytes  = "extra_metadata holds %d bytes of keys and values, more than this server's limit of %d"
	reasonBodyBytes      = "body_json is %d bytes, more than this server's limit of %d"
	reasonBodyDepth      = "body_json nests arrays and objects deeper than this server's limit of %d"
	reasonFieldBytes     = "%s is %d bytes, more than this server's limit of %d"
	reasonClusterDenied  = "this token may not write results of cluster %q"
	reasonClusterQuota   = "this token may write results of at most %d clusters, and cluster %q would be one more"
	reasonKeyQuota       = "this token's clusters may hold at most %d results, and this one would be one more"
)

type forwarder struct {
	pb.UnimplementedResultForwarderServer
	s *Server
}

// candidate is a result that passed its own checks, with its index in the request.
type candidate struct {
	index int
	row   store.Row
}

// Forward checks every result on its own, then the token's quotas, and stores the valid ones in one
// transaction, so a request is stored entirely or not at all and a client's retry after UNAVAILABLE repeats
// exactly what may have been committed.
func (f *forwarder) Forward(ctx context.Context, req *pb.ForwardRequest) (*pb.ForwardResponse, error) {
	resp := &pb.ForwardResponse{}
	results := req.GetResults()
	if len(results) == 0 {
		return resp, nil
	}
	p := principalOf(ctx)
	if p == nil && len(f.s.tokens) > 0 {
		return nil, errUnauthenticated // tapCall authenticates every call: only a call from inside gets here
	}
	reject := func(i int, kind rejectKind, reason string) {
		f.s.metrics.ingest.rejected[kind].Add(1)
		resp.Rejected = append(resp.Rejected, &pb.Rejection{Index: uint32(i), Id: results[i].GetId(), Reason: reason}) //nolint:gosec // G115: i < max results per request (a uint32)
	}
	meta, reason := newRequestMetadata(req.GetExtraMetadata(), f.s.ingest)
	if reason != "" {
		for i := range results {
			reject(i, rejectMetadataTooLarge, reason)
		}
		f.s.metrics.rejected.Add(uint64(len(results)))
		return resp, nil
	}
	now := f.s.now()
	cands := make([]candidate, 0, len(results))
	for i, r := range results {
		rw, kind, reason := f.s.check(r, req.GetExtraMetadata(), p, now)
		if reason != "" {
			reject(i, kind, reason)
			continue
		}
		rw.Meta = meta
		cands = append(cands, candidate{i, rw})
	}
	if p != nil && len(cands) > 0 {
		var err error
		if cands, err = f.s.applyQuotas(ctx, p, cands, now, reject); err != nil {
			return nil, f.s.unavailable(ctx, len(cands), err)
		}
	}
	rows := make([]store.Row, len(cands))
	for i, c := range cands {
		rows[i] = c.row
	}
	// Rejections were made in two passes (each result's checks, then the quotas): the response lists them in
	// request order.
	slices.SortFunc(resp.Rejected, func(a, b *pb.Rejection) int { return cmp.Compare(a.GetIndex(), b.GetIndex()) })
	if len(rows) > 0 {
		if err := f.s.store.Put(ctx, rows, now); err != nil {
			return nil, f.s.unavailable(ctx, len(rows), err)
		}
	}
	resp.Accepted = uint32(len(rows)) //nolint:gosec // G115: at most the request's results, bounded by max results per request (a uint32)
	f.s.metrics.accepted.Add(uint64(len(rows)))
	f.s.metrics.rejected.Add(uint64(len(resp.Rejected)))
	f.s.logger.Debug("forward", zap.Int("accepted", len(rows)), zap.Int("rejected", len(resp.Rejected)))
	return resp, nil
}

// unavailable answers a request the database failed.
func (s *Server) unavailable(ctx context.Context, results int, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	s.logger.Warn("storing forwarded results failed", zap.Int("results", results), zap.Error(err))
	// The database's own message stays in the server's log: it may name hosts and users.
	return status.Error(codes.Unavailable, "the results database is unavailable, retry later")
}

// check runs a result's own checks (toRow), then whether the token may write its cluster, then the limits on
// its body; it orders a result from beyond the clock skew by the time it was received.
func (s *Server) check(r *pb.Result, meta map[string]string, p *principal, now time.Time) (store.Row, rejectKind, string) {
	rw, reason := toRow(r, meta, now)
	if reason != "" {
		return store.Row{}, rejectInvalid, reason
	}
	l := s.ingest
	switch {
	case p != nil && !p.mayWrite(rw.Cluster):
		return store.Row{}, rejectClusterDenied, fmt.Sprintf(reasonClusterDenied, rw.Cluster)
	case len(rw.BodyJSON) > l.MaxBodyBytes:
		return store.Row{}, rejectBodyTooLarge, fmt.Sprintf(reasonBodyBytes, len(rw.BodyJSON), l.MaxBodyBytes)
	case nestsDeeper(rw.BodyJSON, l.MaxBodyDepth):
		return store.Row{}, rejectBodyTooDeep, fmt.Sprintf(reasonBodyDepth, l.MaxBodyDepth)
	case len(rw.Message) > l.MaxMessageBytes:
		return store.Row{}, rejectFieldTooLarge, fmt.Sprintf(reasonFieldBytes, "message", len(rw.Message), l.MaxMessageBytes)
	}
	if name, n := rw.LongestField(); n > l.MaxFieldBytes {
		return store.Row{}, rejectFieldTooLarge, fmt.Sprintf(reasonFieldBytes, name, n, l.MaxFieldBytes)
	}
	// The upsert keeps the row of a key with the latest order: a time from the future would keep it until then,
	// whatever its collector sends meanwhile (a pass observed in 2262, forged or from a clock far ahead, kept a
	// result from ever failing again). Beyond the skew the time is not believed, and the result is ordered by
	// when it arrived, as a result without any time is. Its times are still stored as sent.
	if rw.Order > now.Add(l.MaxClockSkew).UnixNano() {
		rw.Order = now.UnixNano()
		s.metrics.ingest.clampedTimes.Add(1)
	}
	return rw, 0, ""
}

// toRow checks one result and converts it for the store, or says why it cannot be stored.
//
// A result without a cluster takes policyresult.AttrClusterName from extra_metadata. Its key and id may then
// have been computed by the client without the cluster (as the result was sent) or with it; both are accepted,
// and the result is stored under the key and id with the cluster, so that results of two clusters never share a
// row.
func toRow(r *pb.Result, meta map[string]string, now time.Time) (store.Row, string) {
	if r == nil {
		return store.Row{}, ReasonNoResult
	}
	if hasNUL(r) {
		// PostgreSQL text cannot hold NUL; refusing it here keeps one such result from failing its whole batch
		// forever.
		return store.Row{}, ReasonNUL
	}
	switch {
	case r.GetKey() == "":
		return store.Row{}, ReasonNoKey
	case r.GetId() == "":
		return store.Row{}, ReasonNoID
	}
	if _, known := pb.Outcome_name[int32(r.GetOutcome())]; !known {
		return store.Row{}, fmt.Sprintf(reasonUnknownOutcome, r.GetOutcome())
	}
	ts, ok := unixNano(r.GetTimestamp())
	if !ok {
		return store.Row{}, fmt.Sprintf(reasonBadTimestamp, "timestamp")
	}
	observed, ok := unixNano(r.GetObservedTimestamp())
	if !ok {
		return store.Row{}, fmt.Sprintf(reasonBadTimestamp, "observed_timestamp")
	}

	m := resultsapi.ToResult(r)
	sentKey, sentID := m.Key(), m.ID()
	if m.Cluster == "" {
		m.Cluster = meta[policyresult.AttrClusterName]
	}
	key, id := m.Key(), m.ID()
	switch {
	case r.GetKey() != sentKey && r.GetKey() != key:
		return store.Row{}, ReasonKeyMismatch
	case r.GetId() != sentID && r.GetId() != id:
		return store.Row{}, ReasonIDMismatch
	case m.Cluster == "":
		return store.Row{}, ReasonNoCluster
	case strings.IndexByte(m.Cluster, 0) >= 0:
		return store.Row{}, ReasonNUL
	case m.Vulnerability != nil && m.Vulnerability.Score != nil &&
		(math.IsNaN(*m.Vulnerability.Score) || math.IsInf(*m.Vulnerability.Score, 0)):
		return store.Row{}, ReasonBadScore
	}

	rw := store.Row{
		Key: key, ID: id, Cluster: m.Cluster, Source: m.Source, Policy: m.Policy, Rule: m.Rule,
		Category: m.Category, Severity: string(m.Severity), Outcome: string(m.Outcome), Scored: m.Scored,
		Message: m.Message, Resource: m.Resource, Report: m.Report, State: string(m.State),
		Timestamp: ts, Observed: observed, BodyJSON: r.GetBodyJson(), FailedChecks: m.FailedChecks,
	}
	if m.Vulnerability != nil {
		rw.Vulnerability = *m.Vulnerability
	}
	// The time that orders outcomes of one key: when the collector saw it, else when the engine produced it,
	// else (a client that sends neither) when this server received it.
	switch {
	case observed != nil:
		rw.Order = *observed
	case ts != nil:
		rw.Order = *ts
	default:
		rw.Order = now.UnixNano()
	}
	return rw, ""
}

// unixNano converts an optional timestamp; ok is false when it is invalid or beyond what int64 nanoseconds
// hold (years 1678 to 2262), the unit both databases store.
func unixNano(ts *timestamppb.Timestamp) (*int64, bool) {
	if ts == nil {
		return nil, true
	}
	if ts.CheckValid() != nil {
		return nil, false
	}
	const maxSec = math.MaxInt64/1_000_000_000 - 1
	if s := ts.GetSeconds(); s < -maxSec || s > maxSec {
		return nil, false
	}
	n := ts.AsTime().UnixNano()
	return &n, true
}

func hasNUL(r *pb.Result) bool {
	fields := []string{r.GetKey(), r.GetId(), r.GetCluster(), r.GetSource(), r.GetPolicy(), r.GetRule(),
		r.GetCategory(), r.GetMessage(), r.GetBodyJson(),
		r.GetResource().GetApiVersion(), r.GetResource().GetKind(), r.GetResource().GetNamespace(),
		r.GetResource().GetName(), r.GetResource().GetUid(),
		r.GetReport().GetKind(), r.GetReport().GetNamespace(), r.GetReport().GetName()}
	if v := r.GetVulnerability(); v != nil {
		fields = append(fields, v.GetId(), v.GetScoreVersion(), v.GetReference(), v.GetPackageName(),
			v.GetPackageVersion(), v.GetPackageFixedVersion(), v.GetPackagePath(), v.GetPackageType())
	}
	for _, f := range fields {
		if strings.IndexByte(f, 0) >= 0 {
			return true
		}
	}
	return false
}
