// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// t0 is the base of the tests' timestamps.
var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func open(t *testing.T, dsn string, tokens ...string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, Config{DB: dsn, Tokens: fullAccess(tokens...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// spec describes a test result; the zero values of cluster, source and kind are filled in.
type spec struct {
	cluster, source, policy, rule, namespace, name, kind string
	outcome                                              policyresult.Outcome
	severity                                             policyresult.Severity
	state                                                policyresult.State
	message                                              string
	// observed is the observed timestamp in seconds after t0; negative leaves it unset.
	observed int
}

func (s spec) model() policyresult.Result {
	if s.source == "" {
		s.source = "kyverno"
	}
	if s.kind == "" {
		s.kind = "Pod"
	}
	if s.rule == "" {
		s.rule = "check"
	}
	if s.state == "" {
		s.state = policyresult.StateNew
	}
	return policyresult.Result{
		Cluster: s.cluster, Source: s.source, Policy: s.policy, Rule: s.rule, Category: "Best Practices",
		Severity: s.severity, Outcome: s.outcome, Message: s.message, State: s.state,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: s.kind, Namespace: s.namespace, Name: s.name,
			UID: "uid-" + s.name},
		Timestamp: t0,
	}
}

func (s spec) pb() *pb.Result {
	m := s.model()
	r := resultsapi.FromResult(&m)
	if s.observed >= 0 {
		r.ObservedTimestamp = timestamppb.New(t0.Add(time.Duration(s.observed) * time.Second))
	}
	return r
}

func fullAccess(secrets ...string) []Token {
	out := make([]Token, len(secrets))
	for i, s := range secrets {
		out[i] = FullAccess(s)
	}
	return out
}

func forward(t *testing.T, s *Server, req *pb.ForwardRequest) *pb.ForwardResponse {
	t.Helper()
	resp, err := (&forwarder{s: s}).Forward(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func batch(results ...*pb.Result) *pb.ForwardRequest { return &pb.ForwardRequest{Results: results} }

// stored is a current row, as the tests compare it.
type stored struct {
	Key, ID, Cluster, Outcome, State, ExtraMetadata, BodyJSON string
	Resolved                                                  bool
	Order                                                     int64
}

func current(t *testing.T, s *Server) map[string]stored {
	t.Helper()
	rows, err := s.store.DB().Query(`SELECT key, r.id, cluster, outcome, state, m.json, body_json, resolved,
		order_unix_nano FROM results r JOIN metadata m ON m.id = r.metadata_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]stored{}
	for rows.Next() {
		var r stored
		var resolved int
		if err := rows.Scan(&r.Key, &r.ID, &r.Cluster, &r.Outcome, &r.State, &r.ExtraMetadata, &r.BodyJSON,
			&resolved, &r.Order); err != nil {
			t.Fatal(err)
		}
		r.Resolved = resolved == 1
		out[r.Key] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// history lists the (id, state) pairs of the history table.
func history(t *testing.T, s *Server) map[[2]string]bool {
	t.Helper()
	rows, err := s.store.DB().Query(`SELECT id, state FROM result_history`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[[2]string]bool{}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			t.Fatal(err)
		}
		out[[2]string{id, state}] = true
	}
	return out
}

// dump is every column of both tables, to show that a repeated request changed nothing at all.
func dump(t *testing.T, s *Server) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT * FROM results ORDER BY key`,
		`SELECT * FROM result_history ORDER BY id, state`,
	} {
		rows, err := s.store.DB().Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		rows.Close()
	}
	return out
}
