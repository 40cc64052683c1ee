// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
)

func count(t *testing.T, s *Server, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.store.DB().QueryRow(query, args...).Scan(&n), query)
	return n
}

func metricsText(t *testing.T, s *Server) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, s.metrics.write(&b))
	return b.String()
}

// TestMetadataStoredOnce: requests with the same extra_metadata share one row of metadata however many results
// they hold, in both tables; the result's page shows it, the failing list does not carry it.
func TestMetadataStoredOnce(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		dsn := newDSN(t)
		s := open(t, dsn)
		meta := map[string]string{"environment": "prod", "region": "eu-west-1"}
		var first []*pb.Result
		for i := range 50 {
			first = append(first, spec{cluster: "c1", policy: "p", name: fmt.Sprintf("pod-%d", i),
				outcome: policyresult.OutcomeFail, observed: 1}.pb())
		}
		require.Equal(t, uint32(50), forward(t, s, &pb.ForwardRequest{Results: first, ExtraMetadata: meta}).GetAccepted())
		// The same value again (a new outcome of one result), then another value.
		changed := with(spec{cluster: "c1", policy: "p", name: "pod-0", outcome: policyresult.OutcomePass, observed: 2},
			func(s *spec) { s.state = policyresult.StateChanged })
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{changed.pb()}, ExtraMetadata: map[string]string{"region": "eu-west-1", "environment": "prod"}})
		other := spec{cluster: "c1", policy: "p", name: "other", outcome: policyresult.OutcomeFail, observed: 1}
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{other.pb()}, ExtraMetadata: map[string]string{"environment": "staging"}})

		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata`), "one row per distinct value")
		assert.Equal(t, 1, count(t, s, `SELECT COUNT(DISTINCT metadata_id) FROM result_history WHERE key <> $1`, keyOf(other)))

		d, err := s.Result(context.Background(), keyOf(changed))
		require.NoError(t, err)
		assert.Equal(t, meta, d.ExtraMetadata)
		d, err = s.Result(context.Background(), keyOf(other))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"environment": "staging"}, d.ExtraMetadata)

		// A server that restarts finds the values again instead of adding them.
		s = open(t, dsn)
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{with(other, func(s *spec) { s.observed = 5; s.message = "again" }).pb()},
			ExtraMetadata: map[string]string{"environment": "staging"}})
		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata`))
	})
}

// TestMetadataLimits: a request whose extra_metadata has too many keys or bytes has all its results rejected,
// each with the reason, and counted; nothing of it is stored.
func TestMetadataLimits(t *testing.T) {
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/r.db", Ingest: IngestLimits{MaxMetadataKeys: 3, MaxMetadataBytes: 40}})
	many := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	big := map[string]string{"note": strings.Repeat("x", 37)}
	for _, tt := range []struct {
		meta   map[string]string
		reason string
	}{
		{many, "extra_metadata has 4 keys, more than this server's limit of 3"},
		{big, "extra_metadata holds 41 bytes of keys and values, more than this server's limit of 40"},
	} {
		resp := forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{podA.pb(), podB.pb()}, ExtraMetadata: tt.meta})
		assert.Zero(t, resp.GetAccepted())
		require.Len(t, resp.GetRejected(), 2)
		for i, r := range resp.GetRejected() {
			assert.Equal(t, &pb.Rejection{Index: uint32(i), Id: []string{idOf(podA), idOf(podB)}[i], Reason: tt.reason}, r)
		}
	}
	assert.Empty(t, current(t, s))
	assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM metadata`))
	assert.Contains(t, metricsText(t, s), `results_server_results_rejected_total{reason="metadata_too_large"} 4`)
	assert.Equal(t, uint32(1), forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{podA.pb()},
		ExtraMetadata: map[string]string{"a": "1", "b": "2", "note": strings.Repeat("x", 32)}}).GetAccepted(), "at the limits")
}
