// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
)

const day = 24 * time.Hour

func openConfig(t *testing.T, cfg Config) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// at sets the server's clock: what it forwards next is received (and updated) then, and Prune measures ages
// from then.
func at(s *Server, d time.Duration) { s.now = func() time.Time { return t0.Add(d) } }

func pod(name string, state policyresult.State, observed int) spec {
	return spec{cluster: "c1", policy: "require-labels", namespace: "shop", name: name,
		outcome: policyresult.OutcomeFail, severity: policyresult.SeverityHigh, state: state, observed: observed}
}

// TestPrune keeps 90 days of history and 30 of resolved results, pruning in batches of 2, at day 100: history
// received before day 10 and results resolved before day 70 are gone; a current result that is not resolved
// stays however old, also one that was resolved and failed again.
func TestPrune(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := openConfig(t, Config{DB: newDSN(t), Retention: Retention{History: 90 * day, Resolved: 30 * day, BatchSize: 2}})

		at(s, 0)
		oldFail := pod("old-fail", policyresult.StateNew, 1)
		oldResolved := pod("old-resolved", policyresult.StateNew, 1)
		reopened := pod("reopened", policyresult.StateNew, 1)
		forward(t, s, batch(oldFail.pb(), oldResolved.pb(), reopened.pb()))
		forward(t, s, batch(with(oldResolved, func(s *spec) { s.state, s.observed = policyresult.StateResolved, 2 }).pb(),
			with(reopened, func(s *spec) { s.state, s.observed = policyresult.StateResolved, 2 }).pb()))
		var many []spec
		for i := range 5 {
			many = append(many, pod(fmt.Sprintf("many-%d", i), policyresult.StateNew, 1))
			forward(t, s, batch(many[i].pb()))
		}
		at(s, day)
		forward(t, s, batch(with(reopened, func(s *spec) { s.message, s.observed = "failed again", 3 }).pb()))

		at(s, 80*day)
		newFail := pod("new-fail", policyresult.StateNew, 100)
		newResolved := pod("new-resolved", policyresult.StateNew, 100)
		newResolvedEnd := with(newResolved, func(s *spec) { s.state, s.observed = policyresult.StateResolved, 101 })
		forward(t, s, batch(newFail.pb(), newResolved.pb()))
		forward(t, s, batch(newResolvedEnd.pb()))
		require.Len(t, history(t, s), 11+3)

		at(s, 100*day)
		pruned, err := s.Prune(context.Background())
		require.NoError(t, err)
		assert.Equal(t, Pruned{History: 11, Resolved: 1}, pruned, "11 rows in 6 batches of at most 2")

		assert.Equal(t, map[[2]string]bool{
			{idOf(newFail), "new"}: true, {idOf(newResolved), "new"}: true, {idOf(newResolvedEnd), "resolved"}: true,
		}, history(t, s))
		var keys []string
		for k := range current(t, s) {
			keys = append(keys, k)
		}
		want := []string{keyOf(oldFail), keyOf(reopened), keyOf(newFail), keyOf(newResolved)}
		for _, m := range many {
			want = append(want, keyOf(m))
		}
		assert.ElementsMatch(t, want, keys, "every result but the one resolved before day 70")

		var metrics bytes.Buffer
		require.NoError(t, s.metrics.write(&metrics))
		assert.Contains(t, metrics.String(), `results_server_pruned_rows_total{table="result_history"} 11`)
		assert.Contains(t, metrics.String(), `results_server_pruned_rows_total{table="results"} 1`)
		assert.Contains(t, metrics.String(), "results_server_prune_failures_total 0")

		again, err := s.Prune(context.Background())
		require.NoError(t, err)
		assert.Equal(t, Pruned{}, again, "a second prune finds nothing")
	})
}

// TestPruneConcurrently prunes one database from two servers at once, with batches smaller than the rows: every
// old row is deleted exactly once between them, and neither fails.
func TestPruneConcurrently(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		dsn := newDSN(t)
		cfg := Config{DB: dsn, Retention: Retention{History: day, Resolved: day, BatchSize: 3}}
		servers := []*Server{openConfig(t, cfg), openConfig(t, cfg)}
		var specs []spec
		for i := range 40 {
			specs = append(specs, pod(fmt.Sprintf("p-%d", i), policyresult.StateNew, 1))
		}
		at(servers[0], 0)
		for i := range specs {
			forward(t, servers[0], batch(specs[i].pb()))
		}
		for i := range 20 {
			forward(t, servers[0], batch(with(specs[i], func(s *spec) { s.state, s.observed = policyresult.StateResolved, 2 }).pb()))
		}

		var wg sync.WaitGroup
		got := make([]Pruned, len(servers))
		errs := make([]error, len(servers))
		for i, s := range servers {
			at(s, 2*day)
			wg.Go(func() { got[i], errs[i] = s.Prune(context.Background()) })
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		assert.Equal(t, int64(60), got[0].History+got[1].History)
		assert.Equal(t, int64(20), got[0].Resolved+got[1].Resolved)
		assert.Empty(t, history(t, servers[0]))
		assert.Len(t, current(t, servers[0]), 20, "the 20 results never resolved stay")
	})
}

// TestRunRetention prunes at once when it starts, logs what it pruned, and returns when its context ends.
func TestRunRetention(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/results.db", Logger: zap.New(core),
		Retention: Retention{History: day}})
	at(s, 0)
	forward(t, s, batch(pod("a", policyresult.StateNew, 1).pb()))
	at(s, 2*day)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.RunRetention(ctx); close(done) }()
	require.Eventually(t, func() bool { return logs.FilterMessage("pruned").Len() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, map[string]any{"history": int64(1), "resolved": int64(0)},
		func() map[string]any {
			f := logs.FilterMessage("pruned").All()[0].ContextMap()
			delete(f, "took")
			return f
		}())
	assert.Empty(t, history(t, s))
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunRetention did not return when its context ended")
	}
}

func TestRunRetentionWithoutRetentionReturns(t *testing.T) {
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/results.db"})
	done := make(chan struct{})
	go func() { s.RunRetention(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunRetention without any retention runs on")
	}
}

func TestRetentionValidate(t *testing.T) {
	for _, r := range []Retention{{History: -time.Second}, {Resolved: -day}, {Interval: -time.Minute}, {BatchSize: -1}} {
		_, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/x.db", Retention: r})
		assert.ErrorContains(t, err, "must not be negative", "%+v", r)
	}
	assert.NoError(t, Retention{}.Validate())
	assert.False(t, Retention{}.Enabled())
	assert.True(t, Retention{Resolved: time.Hour}.Enabled())
}
