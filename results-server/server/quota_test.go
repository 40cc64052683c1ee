// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
)

// forwardAs forwards as the call of configured token i would reach Forward (tapCall authenticated it).
func forwardAs(t *testing.T, s *Server, i int, req *pb.ForwardRequest) *pb.ForwardResponse {
	t.Helper()
	resp, err := (&forwarder{s: s}).Forward(context.WithValue(context.Background(), principalKey{}, s.tokens[i]), req)
	require.NoError(t, err)
	return resp
}

func inCluster(cluster, name string) spec {
	return spec{cluster: cluster, policy: "p", name: name, outcome: policyresult.OutcomeFail, observed: 1}
}

// assertClusterKeys checks that the clusters table counts every cluster's rows of results.
func assertClusterKeys(t *testing.T, s *Server) {
	t.Helper()
	assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM (SELECT cluster, COUNT(*) AS n FROM results GROUP BY cluster) AS r
		FULL OUTER JOIN clusters c ON c.cluster = r.cluster WHERE COALESCE(r.n, 0) <> COALESCE(c.keys, 0)`),
		"the clusters table counts the rows of results")
}

// TestClusterQuota: a token writes at most MaxClustersPerToken clusters; results of further clusters are
// rejected with the reason and counted, also after a restart, while the clusters it has keep being written and
// another token has its own quota.
func TestClusterQuota(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		cfg := Config{DB: newDSN(t), Tokens: []Token{FullAccess(firstToken), FullAccess(secondToken)},
			Ingest: IngestLimits{MaxClustersPerToken: 3}}
		s := openConfig(t, cfg)
		var req pb.ForwardRequest
		for _, c := range []string{"e", "a", "d", "c", "b", "a"} {
			req.Results = append(req.Results, inCluster(c, "pod-"+c+fmt.Sprint(len(req.Results))).pb())
		}
		resp := forwardAs(t, s, 0, &req)
		assert.Equal(t, uint32(4), resp.GetAccepted(), "clusters a, b and c (in name order)")
		reason := "this token may write results of at most 3 clusters, and cluster %q would be one more"
		assert.Equal(t, []*pb.Rejection{
			{Index: 0, Id: req.Results[0].GetId(), Reason: fmt.Sprintf(reason, "e")},
			{Index: 2, Id: req.Results[2].GetId(), Reason: fmt.Sprintf(reason, "d")},
		}, resp.GetRejected())
		assert.Contains(t, metricsText(t, s), `results_server_results_rejected_total{reason="cluster_quota"} 2`)

		require.NoError(t, s.Close())
		s = openConfig(t, cfg)
		assert.Equal(t, uint32(1), forwardAs(t, s, 0, batch(inCluster("a", "again").pb())).GetAccepted())
		assert.Zero(t, forwardAs(t, s, 0, batch(inCluster("d", "again").pb())).GetAccepted(), "the quota outlives a restart")
		assert.Equal(t, uint32(1), forwardAs(t, s, 1, batch(inCluster("d", "again").pb())).GetAccepted(), "another token's quota")
		assertClusterKeys(t, s)
	})
}

// TestKeyQuota: a token's clusters hold at most MaxKeysPerToken results: results of new keys beyond are
// rejected, results of keys already stored are not; pruning resolved results makes room again.
func TestKeyQuota(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := openConfig(t, Config{DB: newDSN(t), Tokens: []Token{FullAccess(firstToken)},
			Ingest: IngestLimits{MaxKeysPerToken: 5}, Retention: Retention{Resolved: day}})
		at(s, 0)
		var first []*pb.Result
		for i := range 4 {
			first = append(first, inCluster("east", fmt.Sprintf("pod-%d", i)).pb())
		}
		require.Equal(t, uint32(4), forwardAs(t, s, 0, batch(first...)).GetAccepted())

		resolved := with(inCluster("east", "pod-0"), func(s *spec) { s.state, s.observed = policyresult.StateResolved, 2 })
		next := []*pb.Result{resolved.pb(), inCluster("west", "new-0").pb(), inCluster("east", "new-1").pb(), inCluster("east", "new-2").pb()}
		resp := forwardAs(t, s, 0, batch(next...))
		assert.Equal(t, uint32(2), resp.GetAccepted(), "the change of a stored result, and one new result")
		reason := "this token's clusters may hold at most 5 results, and this one would be one more"
		assert.Equal(t, []*pb.Rejection{
			{Index: 2, Id: next[2].GetId(), Reason: reason},
			{Index: 3, Id: next[3].GetId(), Reason: reason},
		}, resp.GetRejected())
		assert.Contains(t, metricsText(t, s), `results_server_results_rejected_total{reason="key_quota"} 2`)
		assertClusterKeys(t, s)

		at(s, 2*day)
		pruned, err := s.Prune(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(1), pruned.Resolved)
		assertClusterKeys(t, s)
		assert.Equal(t, uint32(1), forwardAs(t, s, 0, batch(next[2])).GetAccepted(), "room again after the prune")
		assertClusterKeys(t, s)
	})
}
