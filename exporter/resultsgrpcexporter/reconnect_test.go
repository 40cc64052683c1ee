// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
)

// TestReconnectDelayIsCapped: while the server is unreachable, the exporter tries to connect again at least every
// MaxReconnectDelay (plus gRPC's 20 % jitter), so a server that is back is found within that. The server here
// accepts each connection and closes it at once, as a restarting process does, and the test waits for the eighth
// attempt: with the cap it comes about 24 s after the first, on gRPC's own schedule (1 s × 1.6^n, up to 2
// minutes) 44 s after it, with an 11 s and a 17 s wait before it.
func TestReconnectDelayIsCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for eight connection attempts, about 25 s")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	const want = 8
	attempts := make(chan time.Time, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			attempts <- time.Now()
			c.Close()
		}
	}()

	exp := resultsgrpctest.Start(t, resultsgrpctest.Config(ln.Addr().String()), nil)
	// The first call makes gRPC connect; it fails, and gRPC keeps trying in the background.
	require.Error(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(0, 1, 0)))
	var seen []time.Time
	timeout := time.After(40 * time.Second)
	for len(seen) < want {
		select {
		case at := <-attempts:
			seen = append(seen, at)
		case <-timeout:
			t.Fatalf("%d connection attempts in 40 s, want %d: %v", len(seen), want, seen)
		}
	}
	var longest time.Duration
	for i := 1; i < len(seen); i++ {
		longest = max(longest, seen[i].Sub(seen[i-1]))
	}
	assert.LessOrEqual(t, longest, resultsgrpcexporter.MaxReconnectDelay*6/5+500*time.Millisecond,
		"the longest wait between two connection attempts")
}
