// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit/connlimittest"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// limitedGRPC serves s's gRPC API on a loopback listener limited by lim.
func limitedGRPC(t *testing.T, s *Server, lim ConnLimits) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lis := s.LimitListener(inner, ListenerGRPC, lim)
	gs := s.GRPCServer()
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return inner.Addr().String()
}

// limitedHTTP serves s's HTTP API as cmd/results-server does: limited by lim, its requests finding their
// connection through ConnContext.
func limitedHTTP(t *testing.T, s *Server, lim ConnLimits) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lis := s.LimitListener(inner, ListenerHTTP, lim)
	hs := &http.Server{Handler: s.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second, ConnContext: connlimit.WithConn}
	go func() { _ = hs.Serve(lis) }()
	t.Cleanup(func() { _ = hs.Close() })
	return inner.Addr().String()
}

// silentConns opens n connections that send nothing.
func silentConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		conns[i] = c
	}
	return conns
}

func (s *Server) silentClosedCount(l Listener, reason int) uint64 {
	return s.metrics.silentClosed[l][reason].Load()
}

// TestSilentGRPCConnectionsGiveWay: a gRPC listener full of connections that never called gives their places
// to a collector with a token, one at a time; a connection whose calls are refused stays silent and gives way
// too; the collector's connection, once it called, is never evicted.
func TestSilentGRPCConnectionsGiveWay(t *testing.T) {
	s := sqliteServerWithTokens(t, limitsToken)
	addr := limitedGRPC(t, s, ConnLimits{Max: 4, FirstCallTimeout: time.Minute})
	waitAccepted := func(evicted uint64) {
		t.Helper()
		require.Eventually(t, func() bool { return s.silentClosedCount(ListenerGRPC, 0) == evicted }, 10*time.Second, 5*time.Millisecond)
	}
	silent := silentConns(t, addr, 4)

	legit := pb.NewResultForwarderClient(rawConn(t, addr))
	req := batch(spec{cluster: "c1", policy: "p", name: "a", outcome: "fail"}.pb())
	_, err := callForward(legit, withToken(), req)
	require.NoError(t, err, "the collector's call gets a place")
	waitAccepted(1)
	assert.False(t, connlimittest.StillOpen(t, silent[0], 5*time.Second), "the oldest silent connection gave way")

	stranger := pb.NewResultForwarderClient(rawConn(t, addr))
	_, err = callForward(stranger, context.Background(), req)
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	waitAccepted(2)

	// Three places are silent (two of the first ones and the stranger's): more connections evict them and each
	// other, never the collector's.
	more := silentConns(t, addr, 10)
	waitAccepted(12)
	_, err = callForward(legit, withToken(), req)
	require.NoError(t, err)
	waitAccepted(12)
	assert.Zero(t, s.metrics.connectionsRefused[ListenerGRPC].Load())
	assert.True(t, connlimittest.StillOpen(t, more[9], 100*time.Millisecond), "the newest silent connection is held")
}

// TestGRPCFirstCallTimeout: a connection without an authenticated call is closed at FirstCallTimeout, one that
// made a call is not.
func TestGRPCFirstCallTimeout(t *testing.T) {
	s := sqliteServerWithTokens(t, limitsToken)
	addr := limitedGRPC(t, s, ConnLimits{Max: 10, FirstCallTimeout: 300 * time.Millisecond})
	// The collector connects first: its timer, were it not stopped by the call, would fire before the silent
	// connection's.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := pb.NewResultForwarderClient(conn)
	_, err = callForward(client, withToken(), batch())
	require.NoError(t, err)
	silent := silentConns(t, addr, 1)[0]
	assert.False(t, connlimittest.StillOpen(t, silent, 5*time.Second), "closed at the first call timeout")
	require.Eventually(t, func() bool { return s.silentClosedCount(ListenerGRPC, 1) == 1 }, 5*time.Second, 5*time.Millisecond)
	_, err = callForward(client, withToken(), batch())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), s.silentClosedCount(ListenerGRPC, 1), "only the silent connection timed out")
}

// httpGet sends one GET on c and reads the answer's status.
func httpGet(t *testing.T, c net.Conn, r *bufio.Reader, path, token string) int {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: results\r\n%s\r\n", path, auth)
	require.NoError(t, err)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSilentHTTPConnectionsGiveWay: on the HTTP listener, a connection is proved by an authenticated request,
// not by one answered 401 nor by the open login page; unproved ones give way to new connections.
func TestSilentHTTPConnectionsGiveWay(t *testing.T) {
	s := sqliteServerWithTokens(t, limitsToken)
	addr := limitedHTTP(t, s, ConnLimits{Max: 3, FirstCallTimeout: time.Minute})
	conns := silentConns(t, addr, 3)
	readers := make([]*bufio.Reader, 3)
	for i, c := range conns {
		readers[i] = bufio.NewReader(c)
	}
	require.Equal(t, http.StatusOK, httpGet(t, conns[0], readers[0], "/v1/fleet", limitsToken))
	require.Equal(t, http.StatusUnauthorized, httpGet(t, conns[1], readers[1], "/v1/fleet", "wrong"))
	require.Equal(t, http.StatusOK, httpGet(t, conns[2], readers[2], "/login", ""))

	// Two new connections evict the two unproved ones, oldest first.
	silentConns(t, addr, 2)
	assert.False(t, connlimittest.StillOpen(t, conns[1], 5*time.Second), "the 401 did not prove its connection")
	assert.False(t, connlimittest.StillOpen(t, conns[2], 5*time.Second), "the login page did not prove its connection")
	assert.Equal(t, http.StatusOK, httpGet(t, conns[0], readers[0], "/v1/fleet", limitsToken), "the proved one is held")
	require.Eventually(t, func() bool { return s.silentClosedCount(ListenerHTTP, 0) == 2 }, 5*time.Second, 5*time.Millisecond)
}

func sqliteServerWithTokens(t *testing.T, tokens ...string) *Server {
	t.Helper()
	return open(t, "sqlite://"+t.TempDir()+"/results.db", tokens...)
}
