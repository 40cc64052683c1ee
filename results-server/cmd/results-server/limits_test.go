// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// closedAfter waits for the server to close conn, opened at opened, reading whatever it sends, and returns how
// long after opened that was; it fails the test when conn is still open 10 s later.
func closedAfter(t *testing.T, conn net.Conn, r io.Reader, opened time.Time) time.Duration {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, r)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the connection opened %v ago is still open", time.Since(opened))
	}
	return time.Since(opened)
}

// TestServeClosesIdleAndExcessConnections runs serve with short HTTP timeouts and small connection limits: a
// connection that sends nothing is closed after --http-read-header-timeout, one idle after its request after
// --http-idle-timeout, one over --http-max-connections or --max-connections at once when the others are
// authenticated, and a gRPC connection without the HTTP/2 preface after --handshake-timeout.
func TestServeClosesIdleAndExcessConnections(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte(collectorToken+"\n"), 0o600))
	ports, err := freeport.Ports(2)
	require.NoError(t, err)
	addr, httpAddr := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	o, err := parseServeFlags([]string{"--listen", addr, "--http-listen", httpAddr, "--db", "sqlite://" + filepath.Join(dir, "r.db"),
		"--token-file", tokenFile, "--http-read-header-timeout", "1s", "--http-idle-timeout", "1s",
		"--http-max-connections", "2", "--max-connections", "1", "--handshake-timeout", "1s"}, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, zap.NewNop()) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	dial := func(a string) (net.Conn, time.Time) {
		var c net.Conn
		require.Eventually(t, func() bool {
			var err error
			c, err = net.Dial("tcp", a)
			return err == nil
		}, 10*time.Second, 20*time.Millisecond, "serve listens on %s", a)
		t.Cleanup(func() { _ = c.Close() })
		return c, time.Now()
	}
	// request sends an authenticated request on a new connection and returns it with its reader once answered.
	request := func() (net.Conn, io.Reader, time.Time) {
		c, _ := dial(httpAddr)
		_, err := io.WriteString(c, "GET /v1/fleet HTTP/1.1\r\nHost: results\r\nAuthorization: Bearer "+collectorToken+"\r\n\r\n")
		require.NoError(t, err)
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return c, r, time.Now()
	}

	silent, silentOpened := dial(httpAddr)
	assert.GreaterOrEqual(t, closedAfter(t, silent, silent, silentOpened), 900*time.Millisecond, "closed after the read header timeout")
	idle, idleReader, answered := request()
	request()
	excess, excessOpened := dial(httpAddr)
	assert.Less(t, closedAfter(t, excess, excess, excessOpened), 900*time.Millisecond, "over --http-max-connections: closed on accept")
	assert.GreaterOrEqual(t, closedAfter(t, idle, idleReader, answered), 900*time.Millisecond, "closed after the idle timeout")

	preface, prefaceOpened := dial(addr)
	assert.GreaterOrEqual(t, closedAfter(t, preface, preface, prefaceOpened), 900*time.Millisecond, "closed after the handshake timeout")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	cctx, ccancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+collectorToken), 10*time.Second)
	defer ccancel()
	_, err = pb.NewResultForwarderClient(conn).Forward(cctx, &pb.ForwardRequest{})
	require.NoError(t, err)
	grpcExcess, grpcExcessOpened := dial(addr)
	assert.Less(t, closedAfter(t, grpcExcess, grpcExcess, grpcExcessOpened), 900*time.Millisecond, "over --max-connections: closed on accept")

	req, err := http.NewRequest(http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+collectorToken)
	var body []byte
	require.Eventually(t, func() bool { // a place frees when an idle connection is closed
		hresp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		body, err = io.ReadAll(hresp.Body)
		hresp.Body.Close()
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	for _, l := range []string{`listener="http"`, `listener="grpc"`} {
		v, found := selfmetrics.Sum(string(body), "results_server_connections_refused_total", l)
		assert.True(t, found, l)
		assert.Equal(t, 1.0, v, l)
		_, found = selfmetrics.Sum(string(body), "results_server_silent_connections_closed_total", l)
		assert.True(t, found, l)
	}
	assert.True(t, strings.Contains(string(body), `results_server_requests_refused_total{api="grpc",reason="unauthenticated"} 0`))
}
