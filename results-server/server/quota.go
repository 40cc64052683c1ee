// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
		if over[c.row.Cluster] {
			reject(c.index, rejectClusterQuota, fmt.Sprintf(reasonClusterQuota, s.ingest.MaxClustersPerToken, c.row.Cluster))
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
		if !p.clusters[c.row.Cluster] {
			unknown[c.row.Cluster] = true
		}
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	// Another server on the database may have recorded some: read them again.
	clusters, err := s.store.TokenClusters(ctx, p.fingerprint)
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
			if err := s.store.AddTokenCluster(ctx, p.fingerprint, c, now); err != nil {
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
	used, err := s.store.TokenKeys(ctx, p.fingerprint)
	if err != nil {
		return nil, err
	}
	limit := s.ingest.MaxKeysPerToken
	distinct := map[string]bool{}
	for _, c := range cands {
		distinct[c.row.Key] = true
	}
	if used+int64(len(distinct)) <= limit {
		return cands, nil
	}
	existing, err := s.store.ExistingKeys(ctx, slices.Sorted(maps.Keys(distinct)))
	if err != nil {
		return nil, err
	}
	room := limit - used
	kept, refused := cands[:0], 0
	for _, c := range cands {
		k := c.row.Key
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
