// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// replica is one `serve` of TestReplicas, with its own gRPC and HTTP listeners.
type replica struct {
	grpcAddr, httpAddr string
	client             pb.ResultForwarderClient
}

// TestReplicas runs two servers on one PostgreSQL database, as replicas behind a Service would: they start at
// once (both migrate an empty database), then two clusters' results, with outcomes that change over four
// rounds, are forwarded concurrently and out of order, every request through both servers at once, as a client
// retrying on another replica would deliver it. The database must then hold the last round's outcome per key and
// every outcome in the history once, and both servers' fleet views must show the same counts.
func TestReplicas(t *testing.T) {
	dsn := pgtest.Start(t).CreateDB("results")
	ports, err := freeport.Ports(4)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	// A replica that stops early (its start failed) ends the forwarding at once instead of leaving requests to
	// wait for it.
	fwdCtx, stopForwarding := context.WithCancel(ctx)
	defer stopForwarding()
	start := make(chan struct{})
	var stopped sync.WaitGroup
	replicas := make([]replica, 2)
	for i := range replicas {
		r := &replicas[i]
		r.grpcAddr, r.httpAddr = "127.0.0.1:"+strconv.Itoa(ports[2*i]), "127.0.0.1:"+strconv.Itoa(ports[2*i+1])
		o, err := parseServeFlags([]string{"--listen", r.grpcAddr, "--http-listen", r.httpAddr, "--db", dsn}, io.Discard)
		require.NoError(t, err)
		stopped.Add(1)
		go func() {
			defer stopped.Done()
			<-start
			err := serve(ctx, o, zap.NewNop())
			if ctx.Err() == nil {
				t.Errorf("replica %d stopped early: %v", i, err)
				stopForwarding()
			}
			assert.NoError(t, err, "replica %d", i)
		}()
		conn, err := grpc.NewClient(r.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		r.client = pb.NewResultForwarderClient(conn)
	}
	defer func() {
		cancel()
		stopped.Wait()
	}()
	close(start)

	requests, want := replicaWorkload()
	var wg sync.WaitGroup
	work := make(chan *pb.ForwardRequest)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for req := range work {
				var both sync.WaitGroup
				for i := range replicas {
					both.Add(1)
					go func() {
						defer both.Done()
						fctx, fcancel := context.WithTimeout(fwdCtx, 30*time.Second)
						defer fcancel()
						// WaitForReady: the first requests wait for the replicas to have migrated and listen.
						resp, err := replicas[i].client.Forward(fctx, req, grpc.WaitForReady(true))
						if fwdCtx.Err() != nil {
							return // a replica failed, reported above
						}
						if assert.NoError(t, err, "replica %d", i) {
							assert.Equal(t, uint32(len(req.GetResults())), resp.GetAccepted(), "replica %d", i) //nolint:gosec // a handful of results
							assert.Empty(t, resp.GetRejected(), "replica %d", i)
						}
					}()
				}
				both.Wait()
			}
		}()
	}
	for _, req := range requests {
		work <- req
	}
	close(work)
	wg.Wait()

	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	var versions, maxVersion int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&versions, &maxVersion))
	assert.Equal(t, store.SchemaVersion, versions, "each migration applied once")
	assert.Equal(t, store.SchemaVersion, maxVersion)

	current := map[string][2]string{}
	rows, err := db.Query(`SELECT key, id, state FROM results`)
	require.NoError(t, err)
	for rows.Next() {
		var key, id, state string
		require.NoError(t, rows.Scan(&key, &id, &state))
		current[key] = [2]string{id, state}
	}
	require.NoError(t, rows.Err())
	rows.Close()
	assert.Equal(t, want.current, current, "the latest outcome of every key")

	history := map[[2]string]int{}
	rows, err = db.Query(`SELECT id, state FROM result_history`)
	require.NoError(t, err)
	for rows.Next() {
		var id, state string
		require.NoError(t, rows.Scan(&id, &state))
		history[[2]string{id, state}]++
	}
	require.NoError(t, rows.Err())
	rows.Close()
	assert.Equal(t, want.history, history, "every outcome once, though each was delivered to both replicas")

	// The quotas' counts of keys per cluster, kept by concurrent transactions of both replicas.
	var miscounted int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM (SELECT cluster, COUNT(*) AS n FROM results GROUP BY cluster) AS r
		FULL OUTER JOIN clusters c ON c.cluster = r.cluster WHERE COALESCE(r.n, 0) <> COALESCE(c.keys, 0)`).Scan(&miscounted))
	assert.Zero(t, miscounted, "the clusters table counts the rows of results")

	var views [2]fleetJSON
	for i, r := range replicas {
		views[i] = getFleet(t, r.httpAddr)
		assert.Equal(t, want.clusters, views[i].Clusters, "replica %d", i)
	}
	assert.Equal(t, views[0], views[1], "both replicas show the same fleet")
}

// replicaExpectation is what TestReplicas' workload leaves in the database.
type replicaExpectation struct {
	current  map[string][2]string // key: id, state
	history  map[[2]string]int    // (id, state): rows
	clusters []store.ClusterCounts
}

// replicaWorkload is four rounds of results of 30 pods in each of two clusters, in requests of 10 results of
// one cluster that overlap by half (every result is in two requests of its round), shuffled: later rounds often
// arrive before earlier ones. Outcomes change every round; the last round resolves every fifth pod.
func replicaWorkload() ([]*pb.ForwardRequest, replicaExpectation) {
	const pods, rounds, perRequest = 30, 4, 10
	t0 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	want := replicaExpectation{current: map[string][2]string{}, history: map[[2]string]int{}}
	var requests []*pb.ForwardRequest
	for _, cluster := range []string{"east", "west"} {
		counts := store.ClusterCounts{Cluster: cluster}
		for round := range rounds {
			var results []*pb.Result
			for p := range pods {
				m := policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: "require-labels", Rule: "check-team",
					Outcome:  policyresult.Outcomes[(p+round)%len(policyresult.Outcomes)],
					Severity: policyresult.SeverityHigh, Message: fmt.Sprintf("round %d", round%2),
					Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%02d", p)},
					State:    policyresult.StateChanged}
				switch {
				case round == 0:
					m.State = policyresult.StateNew
				case round == rounds-1 && p%5 == 0:
					m.State = policyresult.StateResolved
				}
				r := resultsapi.FromResult(&m)
				r.ObservedTimestamp = timestamppb.New(t0.Add(time.Duration(round) * time.Minute))
				results = append(results, r)
				want.history[[2]string{m.ID(), string(m.State)}] = 1
				if round == rounds-1 {
					want.current[m.Key()] = [2]string{m.ID(), string(m.State)}
					if m.State != policyresult.StateResolved {
						addOutcome(&counts.Counts, m.Outcome)
					}
				}
			}
			for i := 0; i < pods; i += perRequest / 2 {
				requests = append(requests, &pb.ForwardRequest{Results: results[i:min(i+perRequest, pods)],
					ExtraMetadata: map[string]string{policyresult.AttrClusterName: cluster}})
			}
		}
		want.clusters = append(want.clusters, counts)
	}
	rng := rand.New(rand.NewPCG(19, 5))
	rng.Shuffle(len(requests), func(i, j int) { requests[i], requests[j] = requests[j], requests[i] })
	return requests, want
}

func addOutcome(c *store.Counts, o policyresult.Outcome) {
	switch o {
	case policyresult.OutcomePass:
		c.Pass++
	case policyresult.OutcomeFail:
		c.Fail++
	case policyresult.OutcomeWarn:
		c.Warn++
	case policyresult.OutcomeError:
		c.Error++
	case policyresult.OutcomeSkip:
		c.Skip++
	}
	c.Total++
}

type fleetJSON struct {
	Clusters []store.ClusterCounts `json:"clusters"`
	Policies []store.PolicyCounts  `json:"policies"`
}

func getFleet(t *testing.T, addr string) fleetJSON {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/fleet")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v fleetJSON
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}
