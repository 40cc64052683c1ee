// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// maxGroupRows bounds one group commit: the requests that arrived while the previous transaction was written
// join the next one until it holds this many rows.
const maxGroupRows = 20_000

var errStoreClosed = errors.New("the results store is closed")

// groupCommit is SQLite's only writer. SQLite takes one writer at a time, and a second transaction waits in its
// busy handler, which sleeps and retries: four concurrent requests were stored at half the speed of one. So the
// requests queue here, and the writer stores every request that is waiting in one transaction. Each costs a
// transaction's fixed work (begin, prepare, the WAL write and sync of the commit) once for the group instead of
// once per request, which is most of the cost of the small requests an exporter's consumers send while they
// drain a queue after an outage. A request is acknowledged only after the transaction that holds it committed.
type groupCommit struct {
	s *Store

	mu      sync.Mutex
	pending []*putRequest
	closed  bool

	wake chan struct{} // a request is pending; buffered, so that a wake-up is never lost nor waited for
	quit chan struct{}
	done chan struct{}

	stopOnce sync.Once
	// transactions counts the transactions written, for tests.
	transactions atomic.Int64
}

type putRequest struct {
	ctx  context.Context
	rows []Row
	err  chan error // buffered: the writer never waits for a caller that went away
}

func startGroupCommit(s *Store) *groupCommit {
	g := &groupCommit{s: s, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// put hands rows to the writer and waits until they are committed. A caller whose context ends first gets its
// error; its rows may still be committed, which a retry of the same request then finds stored (idempotent).
func (g *groupCommit) put(ctx context.Context, rows []Row) error {
	r := &putRequest{ctx: ctx, rows: rows, err: make(chan error, 1)}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errStoreClosed
	}
	g.pending = append(g.pending, r)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default: // the writer has a wake-up waiting already
	}
	select {
	case err := <-r.err:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queued is how many requests wait for the writer.
func (g *groupCommit) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

func (g *groupCommit) run() {
	defer close(g.done)
	for {
		select {
		case <-g.wake:
		case <-g.quit:
			g.mu.Lock()
			g.closed = true
			for _, r := range g.pending {
				r.err <- errStoreClosed
			}
			g.pending = nil
			g.mu.Unlock()
			return
		}
		for group := g.next(); len(group) > 0; group = g.next() {
			g.commit(group)
		}
	}
}

// next takes the requests waiting, in their order of arrival, up to maxGroupRows (at least one request).
func (g *groupCommit) next() []*putRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, rows := 0, 0
	for n < len(g.pending) && (n == 0 || rows+len(g.pending[n].rows) <= maxGroupRows) {
		rows += len(g.pending[n].rows)
		n++
	}
	group := g.pending[:n:n]
	g.pending = g.pending[n:]
	return group
}

// commit writes a group in one transaction. When it fails and the group has more than one request, each is
// written alone: one request's rows should not fail the others.
func (g *groupCommit) commit(group []*putRequest) {
	var live []*putRequest
	var rows []Row
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err <- err
			continue
		}
		live = append(live, r)
		rows = append(rows, r.rows...)
	}
	if len(live) == 0 {
		return
	}
	// Not a request's context: the transaction holds several, and must not be cut short by one of them.
	g.transactions.Add(1)
	err := g.s.writeRows(context.Background(), rows)
	if err != nil && len(live) > 1 {
		for _, r := range live {
			g.transactions.Add(1)
			r.err <- g.s.writeRows(context.Background(), r.rows)
		}
		return
	}
	for _, r := range live {
		r.err <- err
	}
}

// stop ends the writer once the transaction in hand is committed; requests still waiting and later ones fail
// with errStoreClosed.
func (g *groupCommit) stop() {
	g.stopOnce.Do(func() { close(g.quit) })
	<-g.done
}
