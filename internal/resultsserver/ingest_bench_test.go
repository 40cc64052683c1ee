// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/internal/pgtest"
	"github.com/otelcol-policy/otelcol-policy/internal/resultsapi"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

const (
	// ingestBatch is the results per request, the results_grpc exporter's default max_results_per_request.
	ingestBatch = 1000
	// ingestChanged is how many results of each request (after the first) change the outcome of a key an
	// earlier request stored; the others are new keys.
	ingestChanged = 300
)

// BenchmarkIngest forwards requests as the results_grpc exporter sends them (1,000 results, extra_metadata,
// bodies of a few hundred bytes; 700 new keys and 300 changed outcomes of earlier keys each) through the
// Forward handler into a real database, one request at a time, and reports results/s. Requests are built with
// the timer stopped, so only checking and storing is measured; the tables grow across iterations as a server's
// do.
//
//	go test -run '^$' -bench BenchmarkIngest -benchtime 50x -count 3 ./internal/resultsserver
func BenchmarkIngest(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchmarkIngest(b, "sqlite://"+filepath.Join(b.TempDir(), "results.db"))
	})
	b.Run("postgres", func(b *testing.B) {
		benchmarkIngest(b, pgtest.Start(b).CreateDB("ingest"))
	})
}

func benchmarkIngest(b *testing.B, dsn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s, err := Open(ctx, Config{DB: dsn})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	f := &forwarder{s: s}
	gen := ingestGenerator{}
	var results int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		req := gen.next()
		b.StartTimer()
		resp, err := f.Forward(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if int(resp.GetAccepted()) != len(req.Results) {
			b.Fatalf("accepted %d of %d: %v", resp.GetAccepted(), len(req.Results), resp.GetRejected())
		}
		results += len(req.Results)
	}
	b.ReportMetric(float64(results)/b.Elapsed().Seconds(), "results/s")
}

// ingestGenerator makes the benchmark's requests: request r holds keys r*700 … r*700+699 and, from the second
// request on, a changed outcome for 300 keys of the previous request.
type ingestGenerator struct {
	requests int
}

var ingestMeta = map[string]string{"environment": "production", "region": "eu-west-1"}

func (g *ingestGenerator) next() *pb.ForwardRequest {
	r := g.requests
	g.requests++
	newKeys := ingestBatch - ingestChanged
	results := make([]*pb.Result, 0, ingestBatch)
	if r > 0 {
		for i := range ingestChanged {
			results = append(results, ingestResult((r-1)*newKeys+i, r, policyresult.OutcomePass))
		}
	}
	for i := range ingestBatch - len(results) {
		results = append(results, ingestResult(r*newKeys+i, r, policyresult.OutcomeFail))
	}
	return &pb.ForwardRequest{Results: results, ExtraMetadata: ingestMeta}
}

// ingestResult is result n as request r sends it: a failing one is new, a passing one a change.
func ingestResult(n, r int, outcome policyresult.Outcome) *pb.Result {
	state, message := policyresult.StateNew, "validation error: label app.kubernetes.io/team is required"
	if outcome == policyresult.OutcomePass {
		state, message = policyresult.StateChanged, ""
	}
	name := fmt.Sprintf("workload-%07d", n)
	m := policyresult.Result{
		Cluster: "prod-eu-1", Source: "kyverno", Policy: fmt.Sprintf("require-labels-%02d", n%40), Rule: "check-team",
		Category: "Best Practices", Severity: policyresult.SeverityMedium, Outcome: outcome, Message: message,
		State: state,
		Resource: policyresult.Resource{APIVersion: "apps/v1", Kind: "Deployment",
			Namespace: fmt.Sprintf("team-%03d", n%200), Name: name, UID: "3f1c2e4a-" + name},
		Report:    policyresult.Report{Kind: "PolicyReport", Namespace: fmt.Sprintf("team-%03d", n%200), Name: "cpol-" + name},
		Timestamp: t0.Add(time.Duration(r) * time.Second),
	}
	out := resultsapi.FromResult(&m)
	out.ObservedTimestamp = timestamppb.New(t0.Add(time.Duration(r)*time.Second + time.Millisecond))
	out.BodyJson = `{"policy":"` + m.Policy + `","rule":"check-team","result":"` + string(outcome) +
		`","message":"` + message + `","resources":[{"apiVersion":"apps/v1","kind":"Deployment","name":"` + name +
		`"}],"properties":{"` + strings.Repeat("x", 40) + `":"` + strings.Repeat("y", 120) + `"}}`
	return out
}
