// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// A token's quotas bound what one token can make the database hold, and the fleet view show, whatever clusters
// it may write: at most IngestLimits.MaxClustersPerToken clusters (token_clusters records those it wrote, by
// the token's fingerprint), whose results (the clusters table counts each cluster's keys) number at most
// IngestLimits.MaxKeysPerToken. Both are checked before a request is stored, against what the database holds:
// concurrent requests of one token may pass a quota by what they hold together (a cluster per server for the
// cluster quota, as this server serialises its own), but no request stored later passes it.

// applyQuotas rejects the candidates beyond the token's quotas and returns the others.
func (s *Server) applyQuotas(ctx context.Context, p *principal, cands []candidate, now time.Time,
	reject func(int, rejectKind, string)) ([]candidate, error) {
	over, err := s.clusterQuota(ctx, p, cands, now)
	if err != nil {
		return nil, err
	}
	kept := cands[:0]
	for _, c := range cands {
		if over[c.row.cluster] {
			reject(c.index, rejectClusterQuota, fmt.Sprintf(reasonClusterQuota, s.ingest.MaxClustersPerToken, c.row.cluster))
			continue
		}
		kept = append(kept, c)
	}
	return s.keyQuota(ctx, p, kept, reject)
}

// clusterQuota records the clusters of cands new to the token while it has room, and returns those beyond it.
func (s *Server) clusterQuota(ctx context.Context, p *principal, cands []candidate, now time.Time) (map[string]bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	unknown := map[string]bool{}
	for _, c := range cands {
		if !p.clusters[c.row.cluster] {
			unknown[c.row.cluster] = true
		}
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	// Another server on the database may have recorded some: read them again.
	clusters, err := s.store.tokenClusters(ctx, p.fingerprint)
	if err != nil {
		return nil, err
	}
	p.clusters = clusters
	over := map[string]bool{}
	for _, c := range slices.Sorted(maps.Keys(unknown)) {
		switch {
		case clusters[c]:
		case len(clusters) >= s.ingest.MaxClustersPerToken:
			over[c] = true
		default:
			if err := s.store.addTokenCluster(ctx, p.fingerprint, c, now); err != nil {
				return nil, err
			}
			clusters[c] = true
		}
	}
	if len(over) > 0 {
		s.logger.Debug("a token is at its quota of clusters: results of further clusters are rejected",
			zap.String("token", p.name), zap.Int("max_clusters_per_token", s.ingest.MaxClustersPerToken), zap.Int("clusters_refused", len(over)))
	}
	return over, nil
}

// keyQuota rejects the results of keys new to the database beyond the room the token's clusters have left.
// Results of keys already stored change a row and never add one: they are always kept.
func (s *Server) keyQuota(ctx context.Context, p *principal, cands []candidate, reject func(int, rejectKind, string)) ([]candidate, error) {
	if len(cands) == 0 {
		return cands, nil
	}
	used, err := s.store.tokenKeys(ctx, p.fingerprint)
	if err != nil {
		return nil, err
	}
	limit := s.ingest.MaxKeysPerToken
	distinct := map[string]bool{}
	for _, c := range cands {
		distinct[c.row.key] = true
	}
	if used+int64(len(distinct)) <= limit {
		return cands, nil
	}
	existing, err := s.store.existingKeys(ctx, slices.Sorted(maps.Keys(distinct)))
	if err != nil {
		return nil, err
	}
	room := limit - used
	kept, refused := cands[:0], 0
	for _, c := range cands {
		k := c.row.key
		switch {
		case existing[k]:
		case room > 0:
			room--
			existing[k] = true
		default:
			reject(c.index, rejectKeyQuota, fmt.Sprintf(reasonKeyQuota, limit))
			refused++
			continue
		}
		kept = append(kept, c)
	}
	if refused > 0 {
		s.logger.Debug("a token's clusters are at its quota of results: results of new keys are rejected",
			zap.String("token", p.name), zap.Int64("max_keys_per_token", limit), zap.Int("results_refused", refused))
	}
	return kept, nil
}

// tokenClusters are the clusters a token wrote.
func (s *store) tokenClusters(ctx context.Context, token string) (map[string]bool, error) {
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

func (s *store) addTokenCluster(ctx context.Context, token, cluster string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO token_clusters (token, cluster, first_unix_nano) VALUES ($1, $2, $3)
		ON CONFLICT (token, cluster) DO NOTHING`, token, cluster, now.UnixNano())
	return err
}

// tokenKeys counts the results of the clusters a token wrote.
func (s *store) tokenKeys(ctx context.Context, token string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(c.keys), 0) FROM token_clusters t
		JOIN clusters c ON c.cluster = t.cluster WHERE t.token = $1`, token).Scan(&n)
	return n, err
}

// existingKeysChunk bounds the parameters of one query of existingKeys.
const existingKeysChunk = 500

// existingKeys are those of keys that results holds.
func (s *store) existingKeys(ctx context.Context, keys []string) (map[string]bool, error) {
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
