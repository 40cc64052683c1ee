// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// holdWriteLock takes SQLite's write lock on path from a connection of its own, as another process would, and
// returns the function that releases it: the server's writer waits in the transaction it began meanwhile.
func holdWriteLock(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?"+sqlitePragmas)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin() // immediate: the write lock is taken here
	require.NoError(t, err)
	_, err = tx.Exec(`INSERT INTO schema_migrations (version, applied_unix_nano) VALUES (-1, 0)`)
	require.NoError(t, err)
	return func() { require.NoError(t, tx.Rollback()) }
}

// forwardAll sends each request from a goroutine of its own once the writer is busy with a first one, and
// returns the responses and errors in the order of reqs.
func forwardAll(t *testing.T, s *Server, path string, reqs []*pb.ForwardRequest) ([]*pb.ForwardResponse, []error) {
	release := holdWriteLock(t, path)
	before := s.store.commits.transactions.Load()
	f := &forwarder{s: s}
	resps, errs := make([]*pb.ForwardResponse, len(reqs)), make([]error, len(reqs))
	var wg sync.WaitGroup
	// The first request takes the writer, which waits for the lock in its transaction.
	wg.Go(func() { resps[0], errs[0] = f.Forward(context.Background(), reqs[0]) })
	waitFor(t, func() bool { return s.store.commits.transactions.Load() == before+1 })
	for i := 1; i < len(reqs); i++ {
		wg.Go(func() { resps[i], errs[i] = f.Forward(context.Background(), reqs[i]) })
	}
	// Every other request is queued at the writer once no goroutine is left that has not reached it.
	waitFor(t, func() bool { return s.store.commits.queued() == len(reqs)-1 })
	release()
	wg.Wait()
	return resps, errs
}

// TestGroupCommit: requests that arrive while one is written are stored together in the next transaction, each
// acknowledged after it; a request whose rows fail does not fail the others of its group.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	s := open(t, "sqlite://"+path)
	req := func(i int, policy string) *pb.ForwardRequest {
		var results []*pb.Result
		for j := range 50 {
			results = append(results, spec{cluster: "east", policy: policy, namespace: "shop",
				name: fmt.Sprintf("pod-%d-%d", i, j), outcome: policyresult.OutcomeFail, observed: 1}.pb())
		}
		return batch(results...)
	}
	reqs := make([]*pb.ForwardRequest, 10)
	for i := range reqs {
		reqs[i] = req(i, "require-labels")
	}
	resps, errs := forwardAll(t, s, path, reqs)
	for i := range reqs {
		require.NoError(t, errs[i], "request %d", i)
		assert.Equal(t, uint32(50), resps[i].GetAccepted())
	}
	assert.Equal(t, int64(2), s.store.commits.transactions.Load(), "the first request, then the nine others together")
	var n int
	require.NoError(t, s.store.db.QueryRow(`SELECT COUNT(*) FROM results`).Scan(&n))
	assert.Equal(t, 500, n)

	// A trigger stands for whatever makes one request's rows fail in the database.
	_, err := s.store.db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON result_history WHEN NEW.policy = 'poison'
		BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`)
	require.NoError(t, err)
	before := s.store.commits.transactions.Load()
	reqs = []*pb.ForwardRequest{req(10, "require-labels"), req(11, "require-labels"), req(12, "poison"), req(13, "require-labels")}
	_, errs = forwardAll(t, s, path, reqs)
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	assert.Equal(t, codes.Unavailable, status.Code(errs[2]), "the poisoned request: %v", errs[2])
	assert.NoError(t, errs[3])
	assert.Equal(t, int64(1+1+3), s.store.commits.transactions.Load()-before, "the first; the group; each of the group alone")
	require.NoError(t, s.store.db.QueryRow(`SELECT COUNT(*) FROM results`).Scan(&n))
	assert.Equal(t, 650, n, "every request but the poisoned one stored")
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(5 * time.Millisecond) //nolint:forbidigo // polls a condition of another goroutine's
	}
}
