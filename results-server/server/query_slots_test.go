// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuerySlots: with every query slot taken, a fleet query waits --query-queue-wait, then is 503 with
// Retry-After (JSON for the API, a page for the web UI) and counted; once a slot frees, it is answered.
// /metrics, the login page and the stylesheet take no slot.
func TestQuerySlots(t *testing.T) {
	s := open(t, "sqlite://"+t.TempDir()+"/results.db")
	s.limits.MaxConcurrentQueries, s.limits.QueryQueueWait = 2, 50*time.Millisecond
	s.queries = newQuerySlots(s.limits)
	hs := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(hs.Close)
	require.NoError(t, s.queries.sem.Acquire(context.Background(), 2))

	paths := []string{"/v1/fleet", "/v1/fleet/failing", "/", "/policies", "/namespaces", "/results", "/results/k", "/trend"}
	for _, path := range paths {
		start := time.Now()
		code, h, body := getPage(t, hs.Client(), hs.URL+path)
		assert.Equal(t, http.StatusServiceUnavailable, code, path)
		assert.Equal(t, "1", h.Get("Retry-After"), path)
		assert.Contains(t, body, "as many fleet queries as it allows at once", path)
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "%s waited for a slot", path)
	}
	assert.Equal(t, uint64(len(paths)), s.metrics.httpBusy.Load())
	for _, path := range []string{"/metrics", "/login", "/static/style.css"} {
		code, _, _ := getPage(t, hs.Client(), hs.URL+path)
		assert.Equal(t, http.StatusOK, code, path)
	}

	s.queries.sem.Release(1)
	for _, path := range paths[:6] {
		code, _, _ := getPage(t, hs.Client(), hs.URL+path)
		assert.Equal(t, http.StatusOK, code, path)
	}
	s.queries.sem.Release(1)
}

// TestQueryTimeout: a query still running at --query-timeout is cancelled and answered 503.
func TestQueryTimeout(t *testing.T) {
	s := open(t, "sqlite://"+t.TempDir()+"/results.db")
	s.limits.QueryTimeout = time.Nanosecond
	hs := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(hs.Close)
	for _, path := range []string{"/v1/fleet", "/"} {
		code, _, body := getPage(t, hs.Client(), hs.URL+path)
		assert.Equal(t, http.StatusServiceUnavailable, code, path)
		assert.Contains(t, body, "the query took longer than the server allows", path)
	}
}
