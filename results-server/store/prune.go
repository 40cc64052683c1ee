// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import "context"

// prune is one table's retention: rows matching cond (whose one parameter is the cutoff, in Unix nanoseconds)
// are deleted, key lists the table's primary key columns. The rows of results are counted in the clusters
// table (see quota.go): PruneResolved subtracts what it deleted, in its transaction.
type prune struct {
	table, key, cond string
}

// The tables the retention prunes, by the names the server's metrics and errors give them.
const (
	HistoryTable = "result_history"
	ResultsTable = "results"
)

var (
	// Both conditions are on the server's own clock (received and updated times), never on a cluster's, so a
	// cluster with a wrong clock cannot get its results pruned early.
	historyPrune  = prune{table: HistoryTable, key: "id, state", cond: "received_unix_nano < $1"}
	resolvedPrune = prune{table: ResultsTable, key: "key", cond: "resolved = 1 AND updated_unix_nano < $1"}
)

// sql is a DELETE of at most $2 rows matching p.cond. The condition is repeated outside the subquery: on
// PostgreSQL, a row that ingest changed between the subquery and the delete (a resolved result that failed
// again) is checked again on its new version and kept. Deleting by a condition is idempotent, so servers
// pruning one database at once need no lock between them; on PostgreSQL, SKIP LOCKED has them (and the
// pruner and ingest) take different rows instead of waiting for each other's.
func (p prune) sql(d dialect) string {
	return "DELETE FROM " + p.table + " WHERE (" + p.key + ") IN (SELECT " + p.key + " FROM " + p.table +
		" WHERE " + p.cond + " LIMIT $2" + d.skipLocked + ") AND " + p.cond
}

// PruneHistory deletes at most size rows of result_history received before cutoff (Unix nanoseconds) and
// returns how many it deleted.
func (s *Store) PruneHistory(ctx context.Context, cutoff int64, size int) (int64, error) {
	return s.deleteBatch(ctx, historyPrune.sql(s.d), cutoff, size)
}

// PruneResolved deletes at most size resolved results last updated before cutoff (Unix nanoseconds), and
// subtracts them from their clusters' counts in the same transaction; it returns how many it deleted.
func (s *Store) PruneResolved(ctx context.Context, cutoff int64, size int) (int64, error) {
	return s.deleteCountedBatch(ctx, resolvedPrune.sql(s.d)+" RETURNING cluster", cutoff, size)
}

func (s *Store) deleteBatch(ctx context.Context, query string, cutoff int64, size int) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, cutoff, size)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// deleteCountedBatch deletes a batch of results (query returns the cluster of each row) and subtracts the rows
// from their clusters' counts, in one transaction.
func (s *Store) deleteCountedBatch(ctx context.Context, query string, cutoff int64, size int) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, query, cutoff, size)
	if err != nil {
		return 0, err
	}
	deleted := map[string]int64{}
	var n int64
	for rows.Next() {
		var cluster string
		if err := rows.Scan(&cluster); err != nil {
			rows.Close()
			return 0, err
		}
		deleted[cluster]--
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if err := addClusterKeys(ctx, sqlTx{tx}, deleted); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
