// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

var (
	podA     = spec{cluster: "c1", policy: "require-labels", namespace: "shop", name: "cart", outcome: policyresult.OutcomeFail, severity: policyresult.SeverityHigh, message: "label team missing", observed: 10}
	podB     = spec{cluster: "c1", policy: "require-labels", namespace: "shop", name: "web", outcome: policyresult.OutcomePass, observed: 10}
	podAPass = func() spec {
		s := podA
		s.outcome, s.message, s.state, s.observed = policyresult.OutcomePass, "", policyresult.StateChanged, 20
		return s
	}()
)

func keyOf(s spec) string { m := s.model(); return m.Key() }
func idOf(s spec) string  { m := s.model(); return m.ID() }

func TestStore(t *testing.T) {
	type step struct {
		req          *pb.ForwardRequest
		wantAccepted uint32
		wantRejected []*pb.Rejection
	}
	tests := []struct {
		name  string
		steps []step
		check func(t *testing.T, s *Server)
	}{{
		name:  "empty request",
		steps: []step{{req: &pb.ForwardRequest{}, wantAccepted: 0}},
		check: func(t *testing.T, s *Server) { assert.Empty(t, current(t, s)) },
	}, {
		name:  "forward",
		steps: []step{{req: batch(podA.pb(), podB.pb()), wantAccepted: 2}},
		check: func(t *testing.T, s *Server) {
			assert.Equal(t, map[string]stored{
				keyOf(podA): {Key: keyOf(podA), ID: idOf(podA), Cluster: "c1", Outcome: "fail", State: "new",
					ExtraMetadata: "{}", Order: t0.Add(10 * time.Second).UnixNano()},
				keyOf(podB): {Key: keyOf(podB), ID: idOf(podB), Cluster: "c1", Outcome: "pass", State: "new",
					ExtraMetadata: "{}", Order: t0.Add(10 * time.Second).UnixNano()},
			}, current(t, s))
			assert.Len(t, history(t, s), 2)
		},
	}, {
		name: "every field of the model is stored",
		steps: []step{{req: func() *pb.ForwardRequest {
			r := podA.pb()
			scored := false
			r.Scored = &scored
			r.Report = &pb.Report{Kind: "PolicyReport", Namespace: "shop", Name: "uid-cart"}
			r.BodyJson = `{"result":"fail"}`
			r.Key, r.Id = "", ""
			m := podA.model()
			m.Scored, m.Report = &scored, policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "uid-cart"}
			r.Key, r.Id = m.Key(), m.ID()
			return batch(r)
		}(), wantAccepted: 1}},
		check: func(t *testing.T, s *Server) {
			var got [25]any
			ptrs := make([]any, len(got))
			for i := range got {
				ptrs[i] = &got[i]
			}
			require.NoError(t, s.store.DB().QueryRow(`SELECT key, r.id, cluster, source, policy, rule, category, severity,
				outcome, scored, message, resource_api_version, resource_kind, resource_namespace, resource_name,
				resource_uid, report_kind, report_namespace, report_name, state, timestamp_unix_nano,
				observed_unix_nano, order_unix_nano, m.json, body_json FROM results r
				JOIN metadata m ON m.id = r.metadata_id`).Scan(ptrs...))
			for i, v := range got {
				if b, ok := v.([]byte); ok {
					got[i] = string(b)
				}
			}
			assert.Equal(t, [25]any{
				got[0], got[1], "c1", "kyverno", "require-labels", "check", "Best Practices", "high",
				"fail", int64(0), "label team missing", "v1", "Pod", "shop", "cart",
				"uid-cart", "PolicyReport", "shop", "uid-cart", "new", t0.UnixNano(),
				t0.Add(10 * time.Second).UnixNano(), t0.Add(10 * time.Second).UnixNano(), "{}", `{"result":"fail"}`,
			}, got)
		},
	}, {
		name: "the same batch again changes nothing and counts once",
		steps: []step{
			{req: batch(podA.pb(), podB.pb()), wantAccepted: 2},
			{req: batch(podA.pb(), podB.pb()), wantAccepted: 2},
		},
		check: func(t *testing.T, s *Server) {
			before := dump(t, s)
			s.now = func() time.Time { return t0.Add(time.Hour) }
			assert.Equal(t, uint32(2), forward(t, s, batch(podA.pb(), podB.pb())).GetAccepted())
			assert.Equal(t, before, dump(t, s), "not even the update time changes")
			assert.Len(t, current(t, s), 2)
			assert.Len(t, history(t, s), 2)
		},
	}, {
		name: "a changed outcome updates the current row",
		steps: []step{
			{req: batch(podA.pb()), wantAccepted: 1},
			{req: batch(podAPass.pb()), wantAccepted: 1},
		},
		check: func(t *testing.T, s *Server) {
			got := current(t, s)
			require.Len(t, got, 1)
			assert.Equal(t, stored{Key: keyOf(podA), ID: idOf(podAPass), Cluster: "c1", Outcome: "pass", State: "changed",
				ExtraMetadata: "{}", Order: t0.Add(20 * time.Second).UnixNano()}, got[keyOf(podA)])
			assert.Equal(t, map[[2]string]bool{{idOf(podA), "new"}: true, {idOf(podAPass), "changed"}: true}, history(t, s))
		},
	}, {
		name: "resolved marks the row resolved and a later new result un-resolves it",
		steps: []step{
			{req: batch(podA.pb()), wantAccepted: 1},
			{req: batch(with(podA, func(s *spec) { s.state, s.observed = policyresult.StateResolved, 20 }).pb()), wantAccepted: 1},
		},
		check: func(t *testing.T, s *Server) {
			got := current(t, s)[keyOf(podA)]
			assert.True(t, got.Resolved)
			assert.Equal(t, "resolved", got.State)
			// The same outcome coming back has the same id as the first time, with a different state.
			assert.Equal(t, uint32(1), forward(t, s, batch(with(podA, func(s *spec) { s.observed = 30 }).pb())).GetAccepted())
			got = current(t, s)[keyOf(podA)]
			assert.False(t, got.Resolved)
			assert.Equal(t, "new", got.State)
			assert.Equal(t, t0.Add(30*time.Second).UnixNano(), got.Order)
			assert.Len(t, history(t, s), 2, "(id, new) was recorded already")
		},
	}, {
		name: "an older observed timestamp does not overwrite a newer one",
		steps: []step{
			{req: batch(podAPass.pb()), wantAccepted: 1},
			{req: batch(podA.pb()), wantAccepted: 1},
		},
		check: func(t *testing.T, s *Server) {
			got := current(t, s)[keyOf(podA)]
			assert.Equal(t, "pass", got.Outcome)
			assert.Equal(t, t0.Add(20*time.Second).UnixNano(), got.Order)
			assert.Len(t, history(t, s), 2, "the older outcome is history all the same")
			// Without an observed timestamp the engine's timestamp (t0) orders it: older still.
			assert.Equal(t, uint32(1), forward(t, s, batch(with(podA, func(s *spec) { s.observed = -1 }).pb())).GetAccepted())
			assert.Equal(t, "pass", current(t, s)[keyOf(podA)].Outcome)
			// An equal timestamp wins: the later request is the later word.
			assert.Equal(t, uint32(1), forward(t, s, batch(with(podA, func(s *spec) { s.observed = 20 }).pb())).GetAccepted())
			assert.Equal(t, "fail", current(t, s)[keyOf(podA)].Outcome)
		},
	}, {
		name: "two outcomes of one key in one request: the later one wins",
		steps: []step{
			{req: batch(with(podAPass, func(s *spec) { s.observed = 10 }).pb(), podB.pb(), podA.pb()), wantAccepted: 3},
		},
		check: func(t *testing.T, s *Server) {
			assert.Equal(t, "fail", current(t, s)[keyOf(podA)].Outcome)
		},
	}, {
		name: "invalid results are rejected, the rest stored",
		steps: []step{{
			req: batch(
				podA.pb(),
				mutate(podB.pb(), func(r *pb.Result) { r.Key = keyOf(podA) }),
				mutate(podB.pb(), func(r *pb.Result) { r.Message = "changed after hashing" }),
				mutate(podB.pb(), func(r *pb.Result) { r.Key = "" }),
				mutate(podB.pb(), func(r *pb.Result) { r.Id = "" }),
				with(podB, func(s *spec) { s.cluster = "" }).pb(),
				mutate(podB.pb(), func(r *pb.Result) { r.Outcome = 42 }),
				mutate(podB.pb(), func(r *pb.Result) { r.Message = "nul\x00byte" }),
				mutate(podB.pb(), func(r *pb.Result) { r.ObservedTimestamp = &timestamppb.Timestamp{Seconds: 1 << 60} }),
				podB.pb(),
			),
			wantAccepted: 2,
			wantRejected: []*pb.Rejection{
				{Index: 1, Id: idOf(podB), Reason: "key does not match the result's identity"},
				{Index: 2, Id: idOf(podB), Reason: "id does not match the result's identity, outcome and message"},
				{Index: 3, Id: idOf(podB), Reason: "key is missing"},
				{Index: 4, Reason: "id is missing"},
				{Index: 5, Id: idOf(with(podB, func(s *spec) { s.cluster = "" })), Reason: "cluster is missing: set it on the result or as k8s.cluster.name in extra_metadata"},
				{Index: 6, Id: idOf(podB), Reason: "outcome 42 is unknown to this server"},
				{Index: 7, Id: idOf(podB), Reason: "a text field contains a NUL character"},
				{Index: 8, Id: idOf(podB), Reason: "observed_timestamp is out of range"},
			},
		}},
		check: func(t *testing.T, s *Server) {
			got := current(t, s)
			assert.Len(t, got, 2)
			assert.Equal(t, "fail", got[keyOf(podA)].Outcome)
			assert.Equal(t, "pass", got[keyOf(podB)].Outcome)
		},
	}, {
		name: "extra_metadata is stored and fills a missing cluster",
		steps: []step{{
			req: &pb.ForwardRequest{
				Results: []*pb.Result{
					// Hashed by a client without the cluster, as sent.
					with(podA, func(s *spec) { s.cluster = "" }).pb(),
					// Hashed by a client that applied the cluster itself but did not set the field.
					mutate(podB.pb(), func(r *pb.Result) { r.Cluster = "" }),
					// A result's own cluster wins over the metadata.
					with(podB, func(s *spec) { s.cluster = "c2" }).pb(),
				},
				ExtraMetadata: map[string]string{policyresult.AttrClusterName: "c1", "env": "prod"},
			},
			wantAccepted: 3,
		}},
		check: func(t *testing.T, s *Server) {
			meta := `{"env":"prod","k8s.cluster.name":"c1"}`
			c2 := with(podB, func(s *spec) { s.cluster = "c2" })
			order := t0.Add(10 * time.Second).UnixNano()
			assert.Equal(t, map[string]stored{
				keyOf(podA): {Key: keyOf(podA), ID: idOf(podA), Cluster: "c1", Outcome: "fail", State: "new", ExtraMetadata: meta, Order: order},
				keyOf(podB): {Key: keyOf(podB), ID: idOf(podB), Cluster: "c1", Outcome: "pass", State: "new", ExtraMetadata: meta, Order: order},
				keyOf(c2):   {Key: keyOf(c2), ID: idOf(c2), Cluster: "c2", Outcome: "pass", State: "new", ExtraMetadata: meta, Order: order},
			}, current(t, s), "stored under the key with the cluster, so clusters never share a row")
		},
	}}
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t, newDSN(t))
				s.now = func() time.Time { return t0.Add(time.Minute) }
				for i, st := range tt.steps {
					resp := forward(t, s, st.req)
					want := &pb.ForwardResponse{Accepted: st.wantAccepted, Rejected: st.wantRejected}
					assert.True(t, proto.Equal(want, resp), "step %d: got %v, want %v", i, resp, want)
				}
				tt.check(t, s)
				assertClusterKeys(t, s)
			})
		}
	})
}

func with(s spec, f func(*spec)) spec {
	f(&s)
	return s
}

func mutate(r *pb.Result, f func(*pb.Result)) *pb.Result {
	f(r)
	return r
}

func TestDatabaseFailureIsUnavailable(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		require.NoError(t, s.store.Close())
		_, err := (&forwarder{s: s}).Forward(context.Background(), batch(podA.pb()))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		_, err = s.Fleet(context.Background(), store.Filter{})
		assert.ErrorContains(t, err, "database is closed")
	})
}

func TestOpenMigratesOnce(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		dsn := newDSN(t)
		s := open(t, dsn)
		forward(t, s, batch(podA.pb()))
		require.NoError(t, s.Close())
		s = open(t, dsn)
		assert.Len(t, current(t, s), 1, "reopening keeps the data")
		var versions int
		require.NoError(t, s.store.DB().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&versions))
		assert.Equal(t, store.SchemaVersion, versions)

		_, err := s.store.DB().Exec(`INSERT INTO schema_migrations (version, applied_unix_nano) VALUES (99, 0)`)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		_, err = Open(context.Background(), Config{DB: dsn})
		assert.ErrorContains(t, err, fmt.Sprintf("the database schema is at version 99, newer than this server's %d", store.SchemaVersion))
	})
}

func TestOpenRejectsBadDSNs(t *testing.T) {
	for _, dsn := range []string{"", "mysql://x", "sqlite://", "sqlite:///tmp/x.db?mode=ro", "results.db"} {
		_, err := Open(context.Background(), Config{DB: dsn})
		assert.Error(t, err, dsn)
	}
	_, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/x.db", Tokens: fullAccess("")})
	assert.ErrorContains(t, err, "empty token")
}
