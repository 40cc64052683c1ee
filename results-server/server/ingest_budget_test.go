// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/hostileclient"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// budgetLimits: messages of at most 1 MiB and 100 results, so the most a request may cost is 3 MiB + 150 KiB.
func budgetLimits(budget int64) Limits {
	return Limits{MaxRecvMsgSize: 1 << 20, MaxResults: 100, IngestBudget: budget}.withDefaults()
}

const budgetMost = 3<<20 + 100*perResultCost

// TestIngestBudgetAdmission: a request is admitted with the max message size while the budget has room for the
// most one request may cost, and while its client holds less than half the budget.
func TestIngestBudgetAdmission(t *testing.T) {
	b := newIngestBudget(budgetLimits(budgetMost + 2<<20 - 1))
	a1, a2 := b.admit("a"), b.admit("b")
	require.NotNil(t, a1)
	require.NotNil(t, a2)
	assert.Nil(t, b.admit("c"), "the budget has no room left for the most one more request may cost")
	a1.release()
	a1.release() // twice: nothing more
	assert.NotNil(t, b.admit("c"))

	b = newIngestBudget(budgetLimits(8 << 20))
	for range 4 {
		require.NotNil(t, b.admit("a"), "up to half the budget")
	}
	assert.Nil(t, b.admit("a"), "a client holding half the budget")
	assert.NotNil(t, b.admit("b"), "another client")
}

// TestIngestBudgetResize: a request gives back what it holds beyond its cost at once, and waits for what it
// lacks ahead of every admission.
func TestIngestBudgetResize(t *testing.T) {
	b := newIngestBudget(budgetLimits(budgetMost + 1<<20 - 1))
	big := b.admit("a")
	require.NotNil(t, big)
	small := b.admit("b")
	require.Nil(t, small, "no room for a second admission")
	require.NoError(t, big.resize(context.Background(), 1000))
	small = b.admit("b")
	require.NotNil(t, small, "the first gave back what it did not need")
	require.NoError(t, small.resize(context.Background(), budgetMost))

	// big needs more than is free: it waits, and no request is admitted meanwhile.
	grown := make(chan error, 1)
	go func() { grown <- big.resize(context.Background(), 2<<20) }()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.resizes.Len() == 1
	}, 5*time.Second, time.Millisecond)
	assert.Nil(t, b.admit("c"), "a waiting resize goes first")
	small.release()
	require.NoError(t, <-grown)
	big.release()
	assert.Zero(t, b.held)
	assert.Empty(t, b.byClient)

	// A resize that runs out of time gives up and leaves nothing held.
	b = newIngestBudget(budgetLimits(2 * budgetMost))
	hold, short := b.admit("a"), b.admit("b")
	require.NotNil(t, hold)
	require.NotNil(t, short)
	require.NoError(t, hold.resize(context.Background(), 2*budgetMost-3<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, short.resize(ctx, budgetMost), context.DeadlineExceeded)
	short.release()
	hold.release()
	assert.Zero(t, b.held)
}

// TestIngestBudgetNeverStalls: many requests of random costs from a few clients, admitted, resized and released
// concurrently as calls are, all finish (none waits on another in a circle), the budget is never exceeded,
// and everything is given back.
func TestIngestBudgetNeverStalls(t *testing.T) {
	l := budgetLimits(2 * budgetMost)
	b := newIngestBudget(l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range uint64(32) {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(g, 1))
			client := fmt.Sprint(g % 4)
			for done := 0; done < 50; {
				tk := b.admit(client)
				if tk == nil {
					if ctx.Err() != nil {
						t.Errorf("goroutine %d: not admitted after %d requests", g, done)
						return
					}
					time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
					continue
				}
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) // receiving
				// Most at the most a request may cost, where requests that wait on each other would show.
				size, results := l.MaxRecvMsgSize, l.MaxResults
				if rng.IntN(3) == 0 {
					size, results = rng.IntN(l.MaxRecvMsgSize+1), rng.IntN(l.MaxResults+1)
				}
				if err := tk.resize(ctx, requestCost(size, results)); err != nil {
					tk.release()
					t.Errorf("goroutine %d, request %d: %v", g, done, err)
					return
				}
				b.mu.Lock()
				assert.LessOrEqual(t, b.held, b.size)
				b.mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond) // storing
				tk.release()
				done++
			}
		})
	}
	wg.Wait()
	assert.Zero(t, b.held)
	assert.Empty(t, b.byClient)
}

// TestIngestBudgetOverGRPC: calls that declare 1 MiB and send a little hold their admission; the call beyond
// the budget is RESOURCE_EXHAUSTED at once, with a RetryInfo, and counted; another token is still admitted;
// once the held calls time out, the first token is admitted again.
func TestIngestBudgetOverGRPC(t *testing.T) {
	l := budgetLimits(budgetMost + 2<<20 + 1)
	l.RequestTimeout = 2 * time.Second
	s, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/results.db", Tokens: fullAccess(firstToken, secondToken), Limits: l})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	addr := serveGRPC(t, s)
	c, err := hostileclient.Dial(addr, 8)
	require.NoError(t, err)
	defer c.Close()
	for range 2 {
		_, err := c.OpenStream("Bearer "+firstToken, 1<<20, make([]byte, 1024))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return s.budget.inUse() == 2<<20 }, 5*time.Second, time.Millisecond, "two calls admitted")

	conn := rawConn(t, addr)
	forwardWith := func(token string) error {
		ctx, cancel := context.WithTimeout(withBearer(token), 10*time.Second)
		defer cancel()
		return hostileclient.Forward(ctx, conn, hostileclient.EmptyResults(20), &pb.ForwardResponse{})
	}
	err = forwardWith(firstToken)
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	require.Len(t, st.Details(), 1)
	assert.Equal(t, time.Second, st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration())
	assert.Equal(t, uint64(1), s.metrics.grpcBusy.Load())

	c2, err := hostileclient.Dial(addr, 8)
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.OpenStream("Bearer "+secondToken, 1<<20, make([]byte, 1024))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.budget.inUse() == 3<<20 }, 5*time.Second, time.Millisecond,
		"another token is admitted while the first holds half the budget")

	outcomes, err := c.Wait(2, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "4", outcomes[0].GRPCStatus, "the held calls end at the request timeout: %+v", outcomes)
	_, err = c2.Wait(1, 10*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.budget.inUse() == 0 }, 5*time.Second, time.Millisecond, "their shares are given back")
	require.NoError(t, forwardWith(firstToken))
}

// TestIngestBudgetRequestIsCharged: the codec charges a request its size and results before decoding it.
func TestIngestBudgetRequestIsCharged(t *testing.T) {
	s := sqliteServer(t)
	req := batch(podA.pb(), podB.pb())
	b, err := protoCodec.Marshal(req)
	require.NoError(t, err)
	tk := s.budget.admit("")
	require.NotNil(t, tk)
	m := &budgetedRequest{ctx: context.Background(), ticket: tk}
	require.NoError(t, requestCodec{maxResults: 10}.Unmarshal(b, m))
	assert.Len(t, m.req.GetResults(), 2)
	assert.Equal(t, requestCost(b.Len(), 2), s.budget.inUse(), "charged its size and results")
	tk.release()
	assert.Zero(t, s.budget.inUse())
}

func withBearer(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// inUse is what the budget holds.
func (b *ingestBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}
