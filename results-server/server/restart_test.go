// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// TestRestartMidStream forwards rounds of changing outcomes while the server is stopped and started again on
// the same port and database, and while some responses are lost after their transaction committed. The client
// retries every request until it succeeds, as the results_grpc exporter does; the stored state must be exactly
// that of the last round, with every outcome in the history once.
func TestRestartMidStream(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		dsn := newDSN(t)
		ports, err := freeport.Ports(1)
		require.NoError(t, err)
		addr := "127.0.0.1:" + strconv.Itoa(ports[0])

		const pods, rounds, perBatch = 40, 12, 20
		var requests [][]*pb.Result
		wantHistory := map[[2]string]bool{}
		wantCounts := map[string]*store.Counts{}
		for r := range rounds {
			var round []*pb.Result
			for i := range pods {
				sp := spec{cluster: fmt.Sprintf("c%d", i%2), policy: "p", namespace: "ns", name: fmt.Sprintf("pod-%02d", i),
					outcome: policyresult.Outcomes[(i+r)%len(policyresult.Outcomes)], observed: r*10 + 1,
					state: policyresult.StateChanged}
				if r == 0 {
					sp.state = policyresult.StateNew
				}
				if r == rounds-1 && i%10 == 0 {
					sp.state = policyresult.StateResolved
				}
				round = append(round, sp.pb())
				wantHistory[[2]string{idOf(sp), string(sp.state)}] = true
				if r == rounds-1 && sp.state != policyresult.StateResolved {
					if wantCounts[sp.cluster] == nil {
						wantCounts[sp.cluster] = &store.Counts{}
					}
					wantCounts[sp.cluster].Add(string(sp.outcome), 1)
				}
			}
			for len(round) > 0 {
				requests = append(requests, round[:perBatch])
				round = round[perBatch:]
			}
		}

		var (
			mu      sync.Mutex
			srv     *Server
			gs      *grpc.Server
			calls   atomic.Int64
			dropped atomic.Int64
		)
		// Every fifth committed request loses its response, as when a server dies between commit and reply.
		loseResponses := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if err == nil && calls.Add(1)%5 == 0 {
				dropped.Add(1)
				return nil, status.Error(codes.Unavailable, "response lost")
			}
			return resp, err
		})
		start := func() {
			s, err := Open(context.Background(), Config{DB: dsn})
			require.NoError(t, err)
			lis, err := net.Listen("tcp", addr)
			require.NoError(t, err)
			g := s.GRPCServer(loseResponses)
			go func() { _ = g.Serve(lis) }()
			mu.Lock()
			srv, gs = s, g
			mu.Unlock()
		}
		stop := func() {
			mu.Lock()
			defer mu.Unlock()
			gs.Stop()
			_ = srv.Close()
		}
		start()
		t.Cleanup(stop)

		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.5, MaxDelay: 200 * time.Millisecond},
				MinConnectTimeout: time.Second,
			}))
		require.NoError(t, err)
		defer conn.Close()
		client := pb.NewResultForwarderClient(conn)

		// The client signals when it has had the answers to a third and to two thirds of the requests.
		marks := []int{len(requests) / 3, 2 * len(requests) / 3}
		reached := []chan struct{}{make(chan struct{}), make(chan struct{})}
		var retries atomic.Int64
		clientErr := make(chan error, 1)
		go func() {
			for done, results := range requests {
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					// WaitForReady: while the server is away the call waits for the connection instead of
					// failing at once, so that retrying needs no pause.
					resp, err := client.Forward(ctx, &pb.ForwardRequest{Results: results}, grpc.WaitForReady(true))
					cancel()
					if err == nil {
						if int(resp.GetAccepted()) != len(results) || len(resp.GetRejected()) > 0 {
							clientErr <- fmt.Errorf("accepted %d of %d, rejected %v", resp.GetAccepted(), len(results), resp.GetRejected())
							return
						}
						break
					}
					if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded && c != codes.Canceled {
						clientErr <- err
						return
					}
					retries.Add(1)
				}
				for i, m := range marks {
					if done+1 == m {
						close(reached[i])
					}
				}
			}
			clientErr <- nil
		}()

		for i := range marks {
			select {
			case <-reached[i]:
			case err := <-clientErr:
				t.Fatalf("the client stopped before request %d: %v", marks[i], err)
			case <-time.After(time.Minute):
				t.Fatalf("the client did not reach request %d", marks[i])
			}
			stop()
			// The client keeps trying against the closed port: its connection fails while a call waits.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			for st := conn.GetState(); st != connectivity.TransientFailure; st = conn.GetState() {
				require.True(t, conn.WaitForStateChange(ctx, st), "the connection stays %s", st)
			}
			cancel()
			start()
		}
		select {
		case err := <-clientErr:
			require.NoError(t, err)
		case <-time.After(2 * time.Minute):
			t.Fatal("the client did not finish")
		}
		t.Logf("%d requests, %d retries, %d responses lost", len(requests), retries.Load(), dropped.Load())
		assert.NotZero(t, retries.Load())

		mu.Lock()
		s := srv
		mu.Unlock()
		got := current(t, s)
		assert.Len(t, got, pods)
		resolved := 0
		for _, r := range got {
			if r.Resolved {
				resolved++
			}
			assert.Equal(t, int64(time.Duration(rounds-1)*10*time.Second+time.Second)+t0.UnixNano(), r.Order)
		}
		assert.Equal(t, pods/10, resolved)
		assert.Equal(t, wantHistory, history(t, s))
		v, err := s.Fleet(context.Background(), store.Filter{})
		require.NoError(t, err)
		assert.Equal(t, []store.ClusterCounts{{Cluster: "c0", Counts: *wantCounts["c0"]}, {Cluster: "c1", Counts: *wantCounts["c1"]}}, v.Clusters)
		var total int64
		for _, c := range v.Clusters {
			total += c.Total
		}
		assert.Equal(t, int64(pods-pods/10), total, "counted once")
	})
}
