// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpc

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/hostileclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// TestBusyServerIsRetriedAfterItsHint: the reference server's ingest budget is held by another client's call,
// which stalls until the server's request timeout; the server refuses the exporter's request with
// RESOURCE_EXHAUSTED and a RetryInfo of 1 s, and the exporter retries after it (not after its own 10 ms) until
// the request is stored.
func TestBusyServerIsRetriedAfterItsHint(t *testing.T) {
	l := server.Limits{MaxRecvMsgSize: 1 << 20, MaxResults: 1000, RequestTimeout: 2 * time.Second}
	// Room for one request's worst case (3 × 1 MiB + 1,000 × 1,536 bytes) and one admission, less a byte.
	l.IngestBudget = 3<<20 + 1000*1536 + 1<<20 - 1
	srv := startServer(t, "sqlite://"+filepath.Join(t.TempDir(), "results.db"), withLimits(l))
	c, err := hostileclient.Dial(srv.addr, 1)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.OpenStream("", 1<<20, make([]byte, 1024))
	require.NoError(t, err)

	cfg := resultsgrpctest.Config(srv.addr)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	exp := resultsgrpctest.Start(t, cfg, nil)
	start := time.Now()
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0)))
	codes := exp.Counts("requests", "code")
	assert.Positive(t, codes["ResourceExhausted"], "refused while the budget was held: %v", codes)
	assert.LessOrEqual(t, codes["ResourceExhausted"], int64(3), "about once a second until the held call ended at 2 s")
	assert.Equal(t, int64(1), codes["OK"])
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "after the server's RetryInfo")
	assert.Len(t, srv.fleet().Failing, 10)
}
