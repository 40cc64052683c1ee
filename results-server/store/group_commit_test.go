// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

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

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
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

// putAll puts each request's rows from a goroutine of its own once the writer is busy with a first one, and
// returns the errors in the order of reqs.
func putAll(t *testing.T, st *Store, path string, reqs [][]Row) []error {
	release := holdWriteLock(t, path)
	before := st.commits.transactions.Load()
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	// The first request takes the writer, which waits for the lock in its transaction.
	wg.Go(func() { errs[0] = st.Put(context.Background(), reqs[0], t0) })
	waitFor(t, func() bool { return st.commits.transactions.Load() == before+1 })
	for i := 1; i < len(reqs); i++ {
		wg.Go(func() { errs[i] = st.Put(context.Background(), reqs[i], t0) })
	}
	// Every other request is queued at the writer once no goroutine is left that has not reached it.
	waitFor(t, func() bool { return st.commits.queued() == len(reqs)-1 })
	release()
	wg.Wait()
	return errs
}

// TestGroupCommit: requests that arrive while one is written are stored together in the next transaction, each
// acknowledged after it; a request whose rows fail does not fail the others of its group.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	st := openStore(t, "sqlite://"+path)
	req := func(i int, policy string) []Row {
		var rows []Row
		for j := range 50 {
			rows = append(rows, testRow(t, "east", policy, fmt.Sprintf("pod-%d-%d", i, j), policyresult.OutcomeFail))
		}
		return rows
	}
	reqs := make([][]Row, 10)
	for i := range reqs {
		reqs[i] = req(i, "require-labels")
	}
	errs := putAll(t, st, path, reqs)
	for i := range reqs {
		require.NoError(t, errs[i], "request %d", i)
	}
	assert.Equal(t, int64(2), st.commits.transactions.Load(), "the first request, then the nine others together")
	assert.Equal(t, 500, count(t, st, `SELECT COUNT(*) FROM results`))

	// A trigger stands for whatever makes one request's rows fail in the database.
	_, err := st.db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON result_history WHEN NEW.policy = 'poison'
		BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`)
	require.NoError(t, err)
	before := st.commits.transactions.Load()
	reqs = [][]Row{req(10, "require-labels"), req(11, "require-labels"), req(12, "poison"), req(13, "require-labels")}
	errs = putAll(t, st, path, reqs)
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	assert.ErrorContains(t, errs[2], "poisoned row", "the poisoned request")
	assert.NoError(t, errs[3])
	assert.Equal(t, int64(1+1+3), st.commits.transactions.Load()-before, "the first; the group; each of the group alone")
	assert.Equal(t, 650, count(t, st, `SELECT COUNT(*) FROM results`), "every request but the poisoned one stored")
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
