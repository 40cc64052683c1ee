// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// Defaults of Retention.
const (
	DefaultRetentionInterval  = time.Hour
	DefaultRetentionBatchSize = 1000
)

// Retention bounds how long the database keeps what it no longer needs. A zero retention keeps forever.
type Retention struct {
	// History is how long a row of result_history is kept after the server received it. Pruned history no
	// longer deduplicates: the same (id, state) forwarded again after it was pruned is recorded again.
	History time.Duration
	// Resolved is how long a current result whose latest state is resolved is kept after it was resolved.
	// Results in any other state are never pruned, whatever their age: they are the fleet's present.
	Resolved time.Duration
	// Interval is the time between two prunes; zero takes DefaultRetentionInterval.
	Interval time.Duration
	// BatchSize is the most rows one DELETE removes, each in its own transaction, so that ingest waits at most
	// for one batch; zero takes DefaultRetentionBatchSize.
	BatchSize int
}

// Enabled reports whether anything is ever pruned.
func (r Retention) Enabled() bool { return r.History > 0 || r.Resolved > 0 }

// Validate refuses negative durations and batch sizes.
func (r Retention) Validate() error {
	return notNegative(namedValue{"history retention", int64(r.History)}, namedValue{"resolved retention", int64(r.Resolved)},
		namedValue{"retention interval", int64(r.Interval)}, namedValue{"retention batch size", int64(r.BatchSize)})
}

func (r Retention) withDefaults() Retention {
	r.Interval = orDefault(r.Interval, DefaultRetentionInterval)
	r.BatchSize = orDefault(r.BatchSize, DefaultRetentionBatchSize)
	return r
}

// Pruned counts the rows one prune deleted.
type Pruned struct {
	History, Resolved int64
}

// RunRetention prunes now and then every Retention.Interval until ctx is done. Without any retention it
// returns at once. Errors are logged and counted; the next prune tries again.
func (s *Server) RunRetention(ctx context.Context) {
	if !s.retention.Enabled() {
		return
	}
	t := time.NewTicker(s.retention.Interval)
	defer t.Stop()
	for {
		start := time.Now()
		p, err := s.Prune(ctx)
		if ctx.Err() != nil {
			return
		}
		fields := []zap.Field{zap.Int64("history", p.History), zap.Int64("resolved", p.Resolved),
			zap.Duration("took", time.Since(start))}
		if err != nil {
			s.logger.Error("pruning failed", append(fields, zap.Error(err))...)
		} else {
			s.logger.Info("pruned", fields...)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Prune deletes, in batches of Retention.BatchSize, the history older than Retention.History and the resolved
// results older than Retention.Resolved, as of the server's clock. It returns what it deleted, also on error.
func (s *Server) Prune(ctx context.Context) (Pruned, error) {
	now := s.now()
	var p Pruned
	var errs []error
	for _, j := range []struct {
		table     string
		batch     pruneBatch
		retention time.Duration
		n         *int64
		counter   *atomic.Uint64
	}{
		{store.HistoryTable, s.store.PruneHistory, s.retention.History, &p.History, &s.metrics.prunedHistory},
		{store.ResultsTable, s.store.PruneResolved, s.retention.Resolved, &p.Resolved, &s.metrics.prunedResolved},
	} {
		if j.retention <= 0 {
			continue
		}
		n, err := s.pruneTable(ctx, j.batch, now.Add(-j.retention).UnixNano(), j.counter)
		*j.n = n
		if err != nil {
			s.metrics.pruneFailures.Add(1)
			errs = append(errs, fmt.Errorf("pruning %s: %w", j.table, err))
		}
	}
	return p, errors.Join(errs...)
}

// pruneBatch deletes at most size rows older than cutoff (Unix nanoseconds) and says how many it deleted.
type pruneBatch func(ctx context.Context, cutoff int64, size int) (int64, error)

// pruneTable deletes batches until one deletes fewer than a batch, counting them in counter. Each DELETE is its
// own transaction, so it holds its locks (SQLite's database lock, PostgreSQL's row locks) for one batch only.
// Rows received or resolved now are never older than cutoff, so the loop ends however fast ingest writes; rows
// PostgreSQL skipped because a request held them wait for the next prune.
func (s *Server) pruneTable(ctx context.Context, batch pruneBatch, cutoff int64, counter *atomic.Uint64) (int64, error) {
	var total int64
	for {
		n, err := batch(ctx, cutoff, s.retention.BatchSize)
		if err != nil {
			return total, err
		}
		total += n
		counter.Add(uint64(n)) //nolint:gosec // RowsAffected is never negative
		if n < int64(s.retention.BatchSize) {
			return total, nil
		}
	}
}
