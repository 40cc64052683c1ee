// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"container/list"
	"context"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// What a request costs while it is decoded and stored, measured on requests of 100 to 10,000 results: its
// bytes three times (the frames as received, their contiguous copy that the decoder reads, and the decoded
// strings), and per result its decoded message (about 600 bytes), its row (600) and its share of the
// statements' arguments.
const (
	wireCopies    = 3
	perResultCost = 1536
)

// requestCost is the ingest budget a request of size bytes holding results results takes.
func requestCost(size, results int) int64 {
	return wireCopies*int64(size) + perResultCost*int64(results)
}

// RetryHint is the delay a refused client is told to wait (RetryInfo on gRPC, Retry-After on HTTP): about the
// time a few requests or queries take to finish and free their share.
const RetryHint = time.Second

// ingestBudget bounds the memory of the requests being received, decoded and stored, server-wide
// (Limits.IngestBudget). A message's size is known only once it is read, so a request takes the budget in two
// steps:
//
//  1. admit, when its headers arrive, before gRPC reads any of its message: the max receive message size, what
//     reading the message may hold. A request is admitted only when the budget has room for the most one
//     request may cost (requestCost of the max size and results): whatever the admitted requests turn out to
//     cost, one of them can always take what it needs, finish and free its share, so they never wait on each
//     other in a circle. Admission does not wait (gRPC admits with the connection's lock held): a request
//     refused is RESOURCE_EXHAUSTED with a RetryInfo of RetryHint, which the results_grpc exporter waits
//     before retrying, and costs nothing more.
//  2. resize, once read and its results counted, before anything is built from it: requestCost of its size and
//     results, in one step (a request that took part of what it needs and waited again for the rest could wait
//     on one that did the same). A request that needs more than it holds waits for it (as long as the call may
//     run), ahead of every admission.
//
// A client (a token, or a source address without tokens) is admitted while it holds less than half the budget,
// so that one that opens calls and never sends their messages, which hold their admission until
// Limits.RequestTimeout, leaves the other half to the others.
type ingestBudget struct {
	size    int64 // the budget, bytes
	receive int64 // what admission takes: the max receive message size
	most    int64 // the most one request may cost: admission needs this much room
	share   int64 // the most one client may hold and still be admitted

	mu       sync.Mutex
	held     int64
	byClient map[string]int64
	resizes  list.List // of *budgetWaiter, in arrival order
}

type budgetWaiter struct {
	n       int64
	client  string
	granted chan struct{}
}

func newIngestBudget(l Limits) *ingestBudget {
	return &ingestBudget{size: l.IngestBudget, receive: int64(l.MaxRecvMsgSize),
		most: requestCost(l.MaxRecvMsgSize, l.MaxResults), share: l.IngestBudget / 2, byClient: map[string]int64{}}
}

var errBusy = func() error {
	st, err := status.New(codes.ResourceExhausted, "the server is storing as many requests as its ingest budget "+
		"allows: retry after the RetryInfo delay").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryHint)})
	if err != nil {
		panic(err)
	}
	return st.Err()
}()

// admit admits a request of client, or returns nil.
func (b *ingestBudget) admit(client string) *budgetTicket {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.resizes.Len() > 0 || b.size-b.held < b.most || b.byClient[client]+b.receive > b.share {
		return nil
	}
	b.add(client, b.receive)
	return &budgetTicket{b: b, client: client, held: b.receive}
}

func (b *ingestBudget) add(client string, n int64) {
	b.held += n
	if b.byClient[client] += n; b.byClient[client] == 0 {
		delete(b.byClient, client)
	}
}

// take waits until n more is granted to client, or returns ctx's error.
func (b *ingestBudget) take(ctx context.Context, client string, n int64) error {
	w := &budgetWaiter{n: n, client: client, granted: make(chan struct{})}
	b.mu.Lock()
	e := b.resizes.PushBack(w)
	b.grant()
	b.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.granted:
		b.add(client, -n) // granted as the wait ended: given back
		b.grant()
	default:
		b.resizes.Remove(e)
		b.grant() // a waiter behind this one may fit now
	}
	return ctx.Err()
}

func (b *ingestBudget) give(client string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.add(client, -n)
	b.grant()
	b.mu.Unlock()
}

// grant serves the waiting resizes that fit, in arrival order.
func (b *ingestBudget) grant() {
	for e := b.resizes.Front(); e != nil; e = b.resizes.Front() {
		w := e.Value.(*budgetWaiter)
		if b.size-b.held < w.n {
			return
		}
		b.add(w.client, w.n)
		b.resizes.Remove(e)
		close(w.granted)
	}
}

// budgetTicket is what one request holds of the budget. It is released by its handler, or when the call ends
// before its handler ran (see Server.admit), whichever comes first.
type budgetTicket struct {
	b      *ingestBudget
	client string

	mu       sync.Mutex
	held     int64
	released bool
}

// resize makes the ticket hold cost: it gives back what it holds beyond, or waits for what it lacks as long
// as ctx lasts.
func (t *budgetTicket) resize(ctx context.Context, cost int64) error {
	t.mu.Lock()
	if t.released {
		t.mu.Unlock()
		return context.Canceled
	}
	if cost <= t.held {
		t.b.give(t.client, t.held-cost)
		t.held = cost
		t.mu.Unlock()
		return nil
	}
	need := cost - t.held
	t.mu.Unlock()
	if err := t.b.take(ctx, t.client, need); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		t.b.give(t.client, need)
		return context.Canceled
	}
	t.held += need
	return nil
}

// release gives back what the ticket holds; later calls do nothing.
func (t *budgetTicket) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.released {
		t.released = true
		t.b.give(t.client, t.held)
		t.held = 0
	}
}
