// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
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
// Forward handler into a real database and reports results/s: one request at a time (sequential), and from
// four senders at once (concurrent), as the exporter's sending queue does with several consumers. Requests are
// built with the timer stopped, so only checking and storing is measured; the tables grow across iterations as
// a server's do.
//
//	go test -run '^$' -bench BenchmarkIngest -benchtime 50x -count 3 ./results-server/server
func BenchmarkIngest(b *testing.B) {
	for _, db := range []struct {
		name string
		dsn  func(b *testing.B, name string) string
	}{
		{"sqlite", func(b *testing.B, _ string) string { return "sqlite://" + filepath.Join(b.TempDir(), "results.db") }},
		{"postgres", func(b *testing.B, name string) string { return pgtest.Start(b).CreateDB(name) }},
	} {
		b.Run(db.name+"/sequential", func(b *testing.B) { benchmarkIngest(b, db.dsn(b, "sequential"), 1) })
		b.Run(db.name+"/concurrent", func(b *testing.B) { benchmarkIngest(b, db.dsn(b, "concurrent"), ingestSenders) })
	}
}

// ingestSenders is the concurrent benchmark's number of senders.
const ingestSenders = 4

func benchmarkIngest(b *testing.B, dsn string, senders int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s, err := Open(ctx, Config{DB: dsn})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	f := &forwarder{s: s}
	// Each sender has keys of its own, as collectors of different clusters do.
	gens := make([]ingestGenerator, senders)
	for i := range gens {
		gens[i].base = i * 100_000_000
	}
	var results int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		reqs := make([]*pb.ForwardRequest, senders)
		for i := range reqs {
			reqs[i] = gens[i].next()
		}
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make([]error, senders)
		for i, req := range reqs {
			wg.Go(func() {
				resp, err := f.Forward(context.Background(), req)
				if err == nil && int(resp.GetAccepted()) != len(req.Results) {
					err = fmt.Errorf("accepted %d of %d: %v", resp.GetAccepted(), len(req.Results), resp.GetRejected())
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		results += senders * ingestBatch
	}
	b.ReportMetric(float64(results)/b.Elapsed().Seconds(), "results/s")
}

// ingestGenerator makes the benchmark's requests: request r holds keys r*700 … r*700+699 and, from the second
// request on, a changed outcome for 300 keys of the previous request.
type ingestGenerator struct {
	requests int
	// base is added to every key number.
	base int
}

var ingestMeta = map[string]string{"environment": "production", "region": "eu-west-1"}

func (g *ingestGenerator) next() *pb.ForwardRequest {
	r := g.requests
	g.requests++
	newKeys := ingestBatch - ingestChanged
	results := make([]*pb.Result, 0, ingestBatch)
	if r > 0 {
		for i := range ingestChanged {
			results = append(results, ingestResult(g.base+(r-1)*newKeys+i, r, policyresult.OutcomePass))
		}
	}
	for i := range ingestBatch - len(results) {
		results = append(results, ingestResult(g.base+r*newKeys+i, r, policyresult.OutcomeFail))
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
