// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	_ "modernc.org/sqlite" // to change a stored body as a server before the limits stored it

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// The attacks of a token holder on what the results server stores and shows (issue 29): each runs against
// bin/results-server with a token file of grants, while the harness's legitimate collector (its token may write
// cluster legit and read) forwards.

const (
	// attackerToken may write its own cluster only; gatewayToken, a line of the format before grants, every
	// cluster; victimToken the victim's.
	attackerToken = "hostile-attacker-token-0123456789abcdef"
	gatewayToken  = "hostile-gateway-token-0123456789abcdef"
	victimToken   = "hostile-victim-token-0123456789abcdef"
)

// dataServer is bin/results-server on the token file of grants, with its database in dir.
type dataServer struct {
	*resultsServer
	dir string
}

func startDataServer(t *testing.T, args ...string) *dataServer {
	dir := t.TempDir()
	tokens := writeFile(t, filepath.Join(dir, "tokens"), fmt.Sprintf(`# the harness's legitimate collector
%s write=legit read
%s write=attacker
%s
%s write=victim
`, resultsServerToken, attackerToken, gatewayToken, victimToken))
	// The flags given last win over the harness's.
	s := startResultsServer(t, append([]string{"--token-file", tokens, "--db", "sqlite://" + filepath.Join(dir, "results.db")}, args...)...)
	return &dataServer{resultsServer: s, dir: dir}
}

// forwarder is a client of the gRPC API with one token.
func (s *dataServer) forwarder(token string) func(*pb.ForwardRequest) (*pb.ForwardResponse, error) {
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = conn.Close() })
	client := pb.NewResultForwarderClient(conn)
	return func(req *pb.ForwardRequest) (*pb.ForwardResponse, error) {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(),
			"authorization", "Bearer "+token), 60*time.Second)
		defer cancel()
		return client.Forward(ctx, req)
	}
}

// diskMiB is what the database takes on disk, its WAL included.
func (s *dataServer) diskMiB() float64 {
	var total int64
	entries, err := os.ReadDir(s.dir)
	require.NoError(s.t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "results.db") {
			info, err := e.Info()
			require.NoError(s.t, err)
			total += info.Size()
		}
	}
	return float64(total) / mib
}

func hostileResult(cluster, name string, outcome policyresult.Outcome) *pb.Result {
	r := policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: "require-labels", Rule: "check",
		Outcome: outcome, State: policyresult.StateNew,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name}}
	return resultsapi.FromResult(&r)
}

// requireRejected checks that every result of resp is rejected with a reason starting with want.
func requireRejected(t *testing.T, resp *pb.ForwardResponse, n int, want string) {
	t.Helper()
	require.Zero(t, resp.GetAccepted())
	require.Len(t, resp.GetRejected(), n)
	for _, r := range resp.GetRejected() {
		require.True(t, strings.HasPrefix(r.GetReason(), want), "reason %q, want %q…", r.GetReason(), want)
	}
}

// TestResultsServerMetadataAmplification: requests of 1,000 tiny results each carrying 1 MiB of extra_metadata
// (1.1 MiB on the wire). The server wrote the metadata into every row of both tables: one such request left
// 2 GiB on disk and 1.1–1.3 GiB of RSS. Now such a request is rejected whole (metadata_too_large), and
// requests with metadata at the limits (64 keys, 16 KiB) store it once: the database grows by the results,
// not by 1,000 copies of the metadata.
func TestResultsServerMetadataAmplification(t *testing.T) {
	s := startDataServer(t)
	forward := s.forwarder(attackerToken)
	requests := pick(3, 20)
	huge, atLimit := map[string]string{}, map[string]string{}
	for i := range 1024 {
		huge[fmt.Sprintf("k%04d", i)] = strings.Repeat("m", 1024-5)
	}
	for i := range server.DefaultMaxMetadataKeys {
		atLimit[fmt.Sprintf("k%02d", i)] = strings.Repeat("m", server.DefaultMaxMetadataBytes/server.DefaultMaxMetadataKeys-3)
	}
	request := func(round int, meta map[string]string) *pb.ForwardRequest {
		req := &pb.ForwardRequest{ExtraMetadata: meta}
		for i := range 1000 {
			req.Results = append(req.Results, hostileResult("attacker", fmt.Sprintf("p-%d-%d", round, i), policyresult.OutcomeFail))
		}
		return req
	}
	before := s.diskMiB()
	s.attack("metadata-1mib", func() {
		for round := range requests {
			resp, err := forward(request(round, huge))
			require.NoError(t, err)
			requireRejected(t, resp, 1000, "extra_metadata has 1024 keys")
			resp, err = forward(request(round, atLimit))
			require.NoError(t, err)
			require.Equal(t, uint32(1000), resp.GetAccepted(), "%v", resp.GetRejected())
		}
	}, func() map[string]float64 {
		rejected := s.metric("results_server_results_rejected_total", `reason="metadata_too_large"`)
		require.Equal(t, float64(1000*requests), rejected)
		grown := s.diskMiB() - before
		t.Logf("database grew by %.1f MiB for %d results with 16 KiB of metadata each", grown, 1000*requests)
		// A copy per row in both tables would be 32 KiB per result; the rows and their indexes take some KiB.
		require.Less(t, grown, float64(requests*1000*16)/1024, "the metadata is stored once, not per row")
		return map[string]float64{"results_rejected_metadata_too_large": rejected, "disk_growth_mib": grown}
	})
}

// nestedArrays is depth arrays, one inside the other.
func nestedArrays(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// TestResultsServerNestedBodyView: a 20 KB body_json of 9,999 nested arrays rendered /results/{key} as a
// 190 MiB page, 1.3 GiB of RSS a view. Now it is rejected at ingest (body_too_deep); a body of 1 MiB within
// the limits (arrays 60 deep, 60 MiB once indented), and the 9,999 nested arrays written into the database as
// a server before the limits stored them, are viewed by 8 clients at once: every page holds at most 256 KiB
// of body, and the server's memory stays bounded.
func TestResultsServerNestedBodyView(t *testing.T) {
	s := startDataServer(t)
	forward := s.forwarder(attackerToken)
	deep := hostileResult("attacker", "deep", policyresult.OutcomeFail)
	deep.BodyJson = nestedArrays(9999)
	wide := hostileResult("attacker", "wide", policyresult.OutcomeFail)
	wide.BodyJson = "[" + strings.Repeat(nestedArrays(60)+",", server.DefaultMaxBodyBytes/121-1) + "1]"
	legacy := hostileResult("attacker", "legacy", policyresult.OutcomeFail)

	resp, err := forward(&pb.ForwardRequest{Results: []*pb.Result{deep}})
	require.NoError(t, err)
	requireRejected(t, resp, 1, "body_json nests arrays and objects deeper")
	resp, err = forward(&pb.ForwardRequest{Results: []*pb.Result{wide, legacy}})
	require.NoError(t, err)
	require.Equal(t, uint32(2), resp.GetAccepted(), "%v", resp.GetRejected())
	db, err := sql.Open("sqlite", filepath.Join(s.dir, "results.db")+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE results SET body_json = ? WHERE key = ?`, deep.GetBodyJson(), legacy.GetKey())
	require.NoError(t, err)
	require.NoError(t, db.Close())

	viewers, rounds := 8, pick(3, 25)
	var mu sync.Mutex
	largest := 0
	s.attack("nested-body-view", func() {
		var wg sync.WaitGroup
		for v := range viewers {
			wg.Go(func() {
				client := s.httpClient()
				for r := range rounds {
					key := []string{wide.GetKey(), legacy.GetKey()}[(v+r)%2]
					resp, err := client.Get("http://" + s.http + "/results/" + key)
					if !assertPage(t, resp, err) {
						return
					}
					page, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					require.NoError(t, err)
					require.Contains(t, string(page), `id="body-cut"`)
					mu.Lock()
					largest = max(largest, len(page))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}, func() map[string]float64 {
		rejected := s.metric("results_server_results_rejected_total", `reason="body_too_deep"`)
		require.Equal(t, 1.0, rejected)
		require.Less(t, largest, 1<<20, "a result's page is bounded")
		return map[string]float64{"results_rejected_body_too_deep": rejected, "largest_page_bytes": float64(largest)}
	})
}

func assertPage(t *testing.T, resp *http.Response, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("viewing a result: %v", err)
		return false
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Errorf("viewing a result: %s", resp.Status)
		return false
	}
	return true
}

// failingOf are the failing results of a cluster, by resource name.
func (s *dataServer) failingOf(cluster string) map[string]string {
	resp, err := s.httpClient().Get("http://" + s.http + "/v1/fleet/failing?cluster=" + cluster)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	var v struct {
		Failing []struct {
			Message  string
			Resource struct{ Name string }
		}
	}
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&v))
	out := map[string]string{}
	for _, f := range v.Failing {
		out[f.Resource.Name] = f.Message
	}
	return out
}

// TestResultsServerForgedFuturePass: a token holder forwards a pass observed in the year 2262 for results of
// another cluster. The server kept the row with the latest time, so the victim's newer failures never became
// current again. Now a token bound to its cluster cannot write the victim's at all (cluster_not_allowed),
// and a token that may (a gateway's, or the victim's collector with its clock far ahead) has such a time
// ordered by its arrival: the victim's next failure is current.
func TestResultsServerForgedFuturePass(t *testing.T) {
	s := startDataServer(t)
	attacker, gateway, victim := s.forwarder(attackerToken), s.forwarder(gatewayToken), s.forwarder(victimToken)
	n := pick(uint32(50), 1000)
	batchOf := func(outcome policyresult.Outcome, state pb.State, observed time.Time) *pb.ForwardRequest {
		req := &pb.ForwardRequest{}
		for i := range n {
			r := hostileResult("victim", fmt.Sprintf("pod-%d", i), outcome)
			if outcome == policyresult.OutcomeFail {
				r.Message = "fails at " + observed.Format(time.RFC3339Nano)
				m := resultsapi.ToResult(r)
				r.Id = m.ID()
			}
			r.State, r.ObservedTimestamp = state, timestamppb.New(observed)
			req.Results = append(req.Results, r)
		}
		return req
	}
	resp, err := victim(batchOf(policyresult.OutcomeFail, pb.State_STATE_NEW, time.Now()))
	require.NoError(t, err)
	require.Equal(t, n, resp.GetAccepted())
	future := time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)

	s.attack("forged-future-pass", func() {
		resp, err := attacker(batchOf(policyresult.OutcomePass, pb.State_STATE_CHANGED, future))
		require.NoError(t, err)
		requireRejected(t, resp, int(n), `this token may not write results of cluster "victim"`)

		resp, err = gateway(batchOf(policyresult.OutcomePass, pb.State_STATE_CHANGED, future))
		require.NoError(t, err)
		require.Equal(t, n, resp.GetAccepted())
		require.Empty(t, s.failingOf("victim"), "the pass is current")

		resp, err = victim(batchOf(policyresult.OutcomeFail, pb.State_STATE_CHANGED, time.Now()))
		require.NoError(t, err)
		require.Equal(t, n, resp.GetAccepted())
	}, func() map[string]float64 {
		require.Len(t, s.failingOf("victim"), int(n), "the victim's newer failures are current, not the forged pass")
		denied := s.metric("results_server_results_rejected_total", `reason="cluster_not_allowed"`)
		require.Equal(t, float64(n), denied)
		clamped := s.metric("results_server_future_times_total", "")
		require.Equal(t, float64(n), clamped)
		return map[string]float64{"results_rejected_cluster_not_allowed": denied, "future_times_reordered": clamped}
	})
}

// TestResultsServerManyClusters: one token forwards results of many clusters of one result each (100,000 of
// them made /policies 519 MiB and 2 GiB of RSS). Now a token writes at most --max-clusters-per-token (100):
// the results of further clusters are rejected (cluster_quota), and the fleet view holds 100 of them.
func TestResultsServerManyClusters(t *testing.T) {
	s := startDataServer(t)
	forward := s.forwarder(gatewayToken)
	clusters := pick(2000, 100000)
	var accepted, rejected int
	s.attack("many-clusters", func() {
		for start := 0; start < clusters; start += 1000 {
			req := &pb.ForwardRequest{}
			for c := start; c < min(clusters, start+1000); c++ {
				req.Results = append(req.Results, hostileResult(fmt.Sprintf("cluster-%06d", c), "pod", policyresult.OutcomeFail))
			}
			resp, err := forward(req)
			require.NoError(t, err)
			accepted += int(resp.GetAccepted())
			rejected += len(resp.GetRejected())
		}
	}, func() map[string]float64 {
		require.Equal(t, server.DefaultMaxClustersPerToken, accepted)
		require.Equal(t, clusters-accepted, rejected)
		quota := s.metric("results_server_results_rejected_total", `reason="cluster_quota"`)
		require.Equal(t, float64(rejected), quota)
		resp, err := s.httpClient().Get("http://" + s.http + "/v1/fleet")
		require.NoError(t, err)
		defer resp.Body.Close()
		var v struct{ Clusters []struct{ Cluster string } }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		require.Len(t, v.Clusters, server.DefaultMaxClustersPerToken+1, "the token's clusters and legit")
		return map[string]float64{"results_rejected_cluster_quota": quota, "clusters_stored": float64(len(v.Clusters))}
	})

	// The gateway token keeps writing the clusters it has.
	resp, err := forward(&pb.ForwardRequest{Results: []*pb.Result{hostileResult("cluster-000000", "another", policyresult.OutcomeFail)}})
	require.NoError(t, err)
	require.Equal(t, uint32(1), resp.GetAccepted())
	_, err = s.forwarder("not-a-token")(&pb.ForwardRequest{Results: []*pb.Result{hostileResult("x", "y", policyresult.OutcomeFail)}})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}
