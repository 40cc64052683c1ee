// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// What the token quotas of the results API read and write: token_clusters records the clusters each token wrote,
// by the token's fingerprint; the clusters table counts each cluster's keys (results rows), kept by every write
// and prune in its transaction.

// TokenClusters are the clusters a token wrote.
func (s *Store) TokenClusters(ctx context.Context, token string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cluster FROM token_clusters WHERE token = $1`, token)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out[c] = true
	}
	return out, rows.Err()
}

// AddTokenCluster records that a token wrote cluster.
func (s *Store) AddTokenCluster(ctx context.Context, token, cluster string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO token_clusters (token, cluster, first_unix_nano) VALUES ($1, $2, $3)
		ON CONFLICT (token, cluster) DO NOTHING`, token, cluster, now.UnixNano())
	return err
}

// TokenKeys counts the results of the clusters a token wrote.
func (s *Store) TokenKeys(ctx context.Context, token string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(c.keys), 0) FROM token_clusters t
		JOIN clusters c ON c.cluster = t.cluster WHERE t.token = $1`, token).Scan(&n)
	return n, err
}

// existingKeysChunk bounds the parameters of one query of ExistingKeys.
const existingKeysChunk = 500

// ExistingKeys are those of keys that results holds.
func (s *Store) ExistingKeys(ctx context.Context, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	for chunk := range slices.Chunk(keys, existingKeysChunk) {
		args := make([]any, len(chunk))
		marks := make([]string, len(chunk))
		for i, k := range chunk {
			args[i], marks[i] = k, fmt.Sprintf("$%d", i+1)
		}
		//nolint:gosec // G202: numbered placeholders only; the keys are arguments
		rows, err := s.db.QueryContext(ctx, `SELECT key FROM results WHERE key IN (`+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addClusterKeys adds the keys a transaction inserted (or, negative, deleted) to their clusters' counts, in
// cluster order (concurrent PostgreSQL transactions then lock the counts in one order).
func addClusterKeys(ctx context.Context, tx txRunner, inserted map[string]int64) error {
	for _, c := range slices.Sorted(maps.Keys(inserted)) {
		if err := tx.exec(ctx, `INSERT INTO clusters (cluster, keys) VALUES ($1, $2)
			ON CONFLICT (cluster) DO UPDATE SET keys = clusters.keys + excluded.keys`, c, inserted[c]); err != nil {
			return fmt.Errorf("counting the keys of cluster %s: %w", c, err)
		}
	}
	return nil
}
