// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testcerts"
	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit/connlimittest"
)

// TestNDJSONSilentConnectionsGiveWay: a socket whose every place is held by a connection that never sent a
// complete line (nothing, or half a line) lets a producer in: its connection takes the oldest one's place.
// Before, the producer's connection was closed on accept as long as the silent ones stayed (idle_timeout, 1 h).
func TestNDJSONSilentConnectionsGiveWay(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].MaxConnections = 2
	tr := startReceiver(t, cfg)
	listener := "unix:" + path

	nothing := dialUnix(t, path)
	half := dialUnix(t, path)
	write(t, half, `{"eventType":"violation_adm`)
	tr.waitConnections(2)

	producer := dialUnix(t, path)
	write(t, producer, gatekeeperLine(1)+"\n")
	assert.Equal(t, "ns-1", tr.waitDecisions(1, 5*time.Second)[0].Resource.Name)
	assert.False(t, connlimittest.StillOpen(t, nothing, 5*time.Second), "the oldest silent connection gave way")
	assert.True(t, connlimittest.StillOpen(t, half, 100*time.Millisecond))
	assert.Equal(t, int64(1), tr.rejectedCount(listener, "evicted"))
	assert.Zero(t, tr.rejectedCount(listener, "too_many_connections"))

	// The producer sent a line: new connections evict the other silent ones, never it.
	for range 3 {
		dialUnix(t, path)
	}
	require.Eventually(t, func() bool { return tr.rejectedCount(listener, "evicted") == 4 }, 5*time.Second, 5*time.Millisecond)
	write(t, producer, gatekeeperLine(2)+"\n")
	assert.Equal(t, "ns-2", tr.waitDecisions(2, 5*time.Second)[1].Resource.Name, "the producer's connection is held")
}

// TestNDJSONFirstLineTimeout: a connection without a complete line first_line_timeout after its accept is
// closed and counted; one that sent a line is held (until idle_timeout).
func TestNDJSONFirstLineTimeout(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].FirstLineTimeout = 300 * time.Millisecond
	tr := startReceiver(t, cfg)
	listener := "unix:" + path

	producer := dialUnix(t, path)
	write(t, producer, gatekeeperLine(1)+"\n")
	tr.waitDecisions(1, 5*time.Second)
	silent := dialUnix(t, path)
	assert.GreaterOrEqual(t, waitClosed(t, silent), 200*time.Millisecond)
	assert.Equal(t, int64(1), tr.rejectedCount(listener, "first_line_timeout"))
	write(t, producer, gatekeeperLine(2)+"\n")
	tr.waitDecisions(2, 5*time.Second)
	assert.Equal(t, int64(1), tr.rejectedCount(listener, "first_line_timeout"), "the producer was not closed")
	assert.Zero(t, tr.rejectedCount(listener, "idle_timeout"))
}

// tcpNDJSON configures one TCP listener on a free loopback port.
func tcpNDJSON(t *testing.T) (*Config, string) {
	cfg := createDefaultConfig().(*Config)
	l := defaultNDJSON()
	l.Transport, l.Endpoint = "tcp", fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t))
	cfg.NDJSON = []NDJSONConfig{l}
	return cfg, l.Endpoint
}

// TestNDJSONSilentConnectionsPerSource: over TCP, one address holds at most max_silent_connections_per_source
// silent connections, each more evicting its own oldest, so that it cannot push out another address's.
func TestNDJSONSilentConnectionsPerSource(t *testing.T) {
	cfg, addr := tcpNDJSON(t)
	cfg.NDJSON[0].MaxConnections, cfg.NDJSON[0].MaxSilentConnectionsPerSource = 16, 2
	tr := startReceiver(t, cfg)
	listener := "tcp:" + addr

	legit := connlimittest.DialFrom(t, "127.0.0.1", addr)
	var attack []net.Conn
	for range 5 {
		attack = append(attack, connlimittest.DialFrom(t, "127.0.0.2", addr))
	}
	require.Eventually(t, func() bool { return tr.rejectedCount(listener, "evicted") == 3 }, 5*time.Second, 5*time.Millisecond)
	for i, c := range attack {
		assert.Equal(t, i >= 3, connlimittest.StillOpen(t, c, 100*time.Millisecond), "attack connection %d", i)
	}
	write(t, legit, gatekeeperLine(1)+"\n")
	tr.waitDecisions(1, 5*time.Second)
}

// TestNDJSONTLSConnectionsWithoutHandshakeGiveWay: on a TLS listener, a connection that never says hello is
// silent: a producer's connection takes its place, and it is counted as evicted, not as a failed handshake.
func TestNDJSONTLSConnectionsWithoutHandshakeGiveWay(t *testing.T) {
	certs := testcerts.New(t)
	files := certs.Write(t, t.TempDir())
	cfg, addr := tcpNDJSON(t)
	cfg.NDJSON[0].MaxConnections = 1
	cfg.NDJSON[0].TLS = configoptional.Some(configtls.ServerConfig{Config: configtls.Config{CertFile: files.ServerCert, KeyFile: files.ServerKey}})
	tr := startReceiver(t, cfg)
	listener := "tcp:" + addr

	mute, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer mute.Close()
	tr.waitConnections(1)
	producer, err := tls.Dial("tcp", addr, certs.ClientTLS(t, false))
	require.NoError(t, err)
	defer producer.Close()
	write(t, producer, gatekeeperLine(1)+"\n")
	tr.waitDecisions(1, 5*time.Second)
	assert.False(t, connlimittest.StillOpen(t, mute, 5*time.Second))
	assert.Equal(t, int64(1), tr.rejectedCount(listener, "evicted"))
	assert.Zero(t, tr.rejectedCount(listener, "tls_handshake"))
}

// TestOPASilentConnectionsGiveWay: an OPA endpoint behind bearer token auth, every place held by connections
// that sent nothing or only requests without the token (answered 401), lets an upload with the token in; the
// connection of that upload is then never evicted. Before, the token-carrying upload was closed on accept.
func TestOPASilentConnectionsGiveWay(t *testing.T) {
	cfg := opaConfig(t)
	cfg.OPA.Get().MaxConnections = 3
	tr := startReceiverWithBearerAuth(t, cfg, "s3cret-token")
	addr := cfg.OPA.Get().ServerConfig.NetAddr.Endpoint

	nothing, _ := net.Dial("tcp", addr)
	defer nothing.Close()
	stranger, _ := net.Dial("tcp", addr)
	defer stranger.Close()
	assert.Equal(t, http.StatusUnauthorized, postOn(t, stranger, upload("forged", 1), ""))
	third, _ := net.Dial("tcp", addr)
	defer third.Close()

	opa, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer opa.Close()
	assert.Equal(t, http.StatusOK, postOn(t, opa, upload("opa", 1), "s3cret-token"))
	assert.False(t, connlimittest.StillOpen(t, nothing, 5*time.Second), "the oldest silent connection gave way")

	// The 401 did not prove the stranger's connection: the next ones evict it and the third, not OPA's.
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
	}
	assert.False(t, connlimittest.StillOpen(t, stranger, 5*time.Second))
	assert.False(t, connlimittest.StillOpen(t, third, 5*time.Second))
	assert.Equal(t, http.StatusOK, postOn(t, opa, upload("opa-again", 1), "s3cret-token"))
	tr.waitDecisions(2, 5*time.Second)
	assert.Equal(t, int64(3), tr.rejectedCount("opa", "evicted"))
	assert.Zero(t, tr.rejectedCount("opa", "too_many_connections"))
}

// TestOPAFirstRequestTimeout: a connection without a request through to the endpoint first_request_timeout
// after its accept is closed and counted.
func TestOPAFirstRequestTimeout(t *testing.T) {
	cfg := opaConfig(t)
	cfg.OPA.Get().FirstRequestTimeout = 300 * time.Millisecond
	tr := startReceiver(t, cfg)
	silent, err := net.Dial("tcp", cfg.OPA.Get().ServerConfig.NetAddr.Endpoint)
	require.NoError(t, err)
	defer silent.Close()
	assert.GreaterOrEqual(t, waitClosed(t, silent), 200*time.Millisecond)
	assert.Equal(t, int64(1), tr.rejectedCount("opa", "first_request_timeout"))
}
