// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testcerts"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// openConnections is the receiver's gauge of open stream connections.
func (tr *testReceiver) openConnections() int64 {
	m, err := tr.telemetry.GetMetric("otelcol_receiver_decision_logs_connections")
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}

func (tr *testReceiver) waitConnections(n int64) {
	tr.t.Helper()
	require.Eventually(tr.t, func() bool { return tr.openConnections() == n }, 5*time.Second, 5*time.Millisecond,
		"%d open connections", n)
}

// waitClosed waits until the collector closes c, and says how long that took.
func waitClosed(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		require.NoError(t, err, "the collector closes the connection")
	}
	return time.Since(start)
}

func dialUnix(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	_, err := c.Write([]byte(s))
	require.NoError(t, err)
}

func TestNDJSONConnectionsOverMaxConnectionsAreClosed(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].MaxConnections = 2
	tr := startReceiver(t, cfg)
	listener := "unix:" + path

	// Two producers that sent a line, then hold half a line each, take the listener's places: they are not
	// silent, so a new connection finds none to give way.
	held := []net.Conn{dialUnix(t, path), dialUnix(t, path)}
	for i, c := range held {
		write(t, c, gatekeeperLine(i)+"\n")
	}
	tr.waitDecisions(2, 5*time.Second)
	for _, c := range held {
		write(t, c, `{"eventType":"violation_adm`)
	}

	extra := dialUnix(t, path)
	waitClosed(t, extra)
	assert.Equal(t, int64(1), tr.rejectedCount(listener, "too_many_connections"))

	require.NoError(t, held[0].Close())
	tr.waitConnections(1)
	c := dialUnix(t, path)
	write(t, c, gatekeeperLine(2)+"\n")
	assert.Equal(t, "ns-2", tr.waitDecisions(3, 5*time.Second)[2].Resource.Name, "a place freed is taken")
	assert.Zero(t, tr.rejectedCount(listener, "evicted"))
}

func TestNDJSONLineTimeoutClosesAConnectionThatHoldsHalfALine(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].LineTimeout = 300 * time.Millisecond
	tr := startReceiver(t, cfg)

	c := dialUnix(t, path)
	write(t, c, gatekeeperLine(1)+"\n"+`{"eventType":"violation_adm`)
	took := waitClosed(t, c)
	assert.GreaterOrEqual(t, took, 200*time.Millisecond)
	assert.Equal(t, "ns-1", tr.waitDecisions(1, 5*time.Second)[0].Resource.Name, "the complete line is delivered")
	assert.Equal(t, int64(1), tr.rejectedCount("unix:"+path, "line_timeout"))
	assert.Zero(t, tr.rejectedCount("unix:"+path, "idle_timeout"))
}

func TestNDJSONLineTimeoutCountsFromTheLinesFirstByte(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].LineTimeout = 300 * time.Millisecond
	tr := startReceiver(t, cfg)

	// A line trickled a byte at a time is cut off at line_timeout however steadily it comes.
	c := dialUnix(t, path)
	done := make(chan time.Duration)
	go func() { done <- waitClosed(t, c) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for trickled := 0; ; trickled++ {
		select {
		case took := <-done:
			assert.Less(t, took, 2*time.Second)
			assert.Equal(t, int64(1), tr.rejectedCount("unix:"+path, "line_timeout"))
			return
		case <-tick.C:
			_, _ = c.Write([]byte{"{\"a\":"[trickled%5]})
		}
	}
}

func TestNDJSONIdleTimeoutClosesAQuietConnection(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].IdleTimeout = 300 * time.Millisecond
	tr := startReceiver(t, cfg)

	c := dialUnix(t, path)
	write(t, c, gatekeeperLine(1)+"\n")
	assert.GreaterOrEqual(t, waitClosed(t, c), 200*time.Millisecond)
	tr.waitDecisions(1, 5*time.Second)
	assert.Equal(t, int64(1), tr.rejectedCount("unix:"+path, "idle_timeout"))
	assert.Zero(t, tr.rejectedCount("unix:"+path, "line_timeout"))
	tr.waitConnections(0)
}

// TestNDJSONLineTimeoutWaitsOutBackpressure: while the pipeline refuses, the connection is not read, and a line
// that began meanwhile gets its whole line_timeout once reading resumes.
func TestNDJSONLineTimeoutWaitsOutBackpressure(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].LineTimeout = 200 * time.Millisecond
	cfg.MaxBatchRecords = 1
	tr := startReceiver(t, cfg)
	tr.sink.refusing.Store(true)

	c := dialUnix(t, path)
	line2 := gatekeeperLine(2)
	write(t, c, gatekeeperLine(1)+"\n"+line2[:40])
	// Retries after 10, 20, … 640 ms: 1.3 s of refusals, six line timeouts.
	require.Eventually(t, func() bool { return tr.sink.refused.Load() >= 8 }, 10*time.Second, 10*time.Millisecond)
	tr.sink.refusing.Store(false)
	write(t, c, line2[40:]+"\n")
	got := tr.waitDecisions(2, 10*time.Second)
	assert.Equal(t, "ns-2", got[1].Resource.Name)
	assert.Zero(t, tr.rejectedCount("unix:"+path, "line_timeout"))
}

func TestNDJSONTLSHandshakeTimeout(t *testing.T) {
	certs := testcerts.New(t)
	files := certs.Write(t, t.TempDir())
	cfg := createDefaultConfig().(*Config)
	l := defaultNDJSON()
	l.Transport, l.Endpoint, l.HandshakeTimeout = "tcp", "127.0.0.1:0", 300*time.Millisecond
	l.TLS = configoptional.Some(configtls.ServerConfig{Config: configtls.Config{CertFile: files.ServerCert, KeyFile: files.ServerKey}})
	cfg.NDJSON = []NDJSONConfig{l}
	tr := startReceiver(t, cfg)
	addr := tr.rcv.listeners[0].ln.Addr().String()

	// A client that connects and never says hello.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	assert.GreaterOrEqual(t, waitClosed(t, c), 200*time.Millisecond)
	// The collector counts the failed handshake once it closed the connection.
	require.Eventually(t, func() bool { return tr.rejectedCount("tcp:127.0.0.1:0", "tls_handshake") == 1 },
		5*time.Second, 10*time.Millisecond)

	tc, err := tls.Dial("tcp", addr, certs.ClientTLS(t, false))
	require.NoError(t, err)
	defer tc.Close()
	_, err = tc.Write([]byte(gatekeeperLine(1) + "\n"))
	require.NoError(t, err)
	tr.waitDecisions(1, 5*time.Second)
}

// TestNDJSONLongLinesDoNotAmplify: the array bomb of the OPA endpoint, as lines within max_line_bytes.
func TestNDJSONLongLinesDoNotAmplify(t *testing.T) {
	cfg, path := unixConfig(t)
	tr := startReceiver(t, cfg)

	// 5 lines of 512 KiB: 262,144 array elements each, 7 MB each as pdata.
	bomb := `{"eventType":"violation_admission","kind":"K8sBomb","details":[` + strings.Repeat("0,", 256<<10-40) + "0]}\n"
	data := gatekeeperLine(1) + "\n" + strings.Repeat(bomb, 5) + gatekeeperLine(2) + "\n"
	before := allocatedBytes()
	c := dialUnix(t, path)
	write(t, c, data)
	got := tr.waitDecisions(2, 10*time.Second)
	grew := allocatedBytes() - before
	t.Logf("%.1f MiB of lines, %.1f MiB allocated", float64(len(data))/(1<<20), float64(grew)/(1<<20))
	assert.Equal(t, []string{"ns-1", "ns-2"}, []string{got[0].Resource.Name, got[1].Resource.Name})
	assert.Equal(t, int64(5), tr.rejectedCount("unix:"+path, "event_too_large"))
	assert.Less(t, grew, uint64(16<<20), "what reading 2.5 MiB of lines allocated")
}

func allocatedBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func TestNDJSONBatchesStayWithinMaxBatchBytes(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.MaxBatchBytes = minBatchBytes
	tr := startReceiver(t, cfg)
	ev, err := decode.Gatekeeper([]byte(gatekeeperLine(100)))
	require.NoError(t, err)
	price, err := tr.rcv.price(&ev)
	require.NoError(t, err)
	perBatch := cfg.MaxBatchBytes / (price + len(gatekeeperLine(100)))

	var b strings.Builder
	const n = 100
	for i := range n {
		fmt.Fprintln(&b, gatekeeperLine(100+i))
	}
	write(t, dialUnix(t, path), b.String())
	tr.waitDecisions(n, 5*time.Second)
	for _, ld := range tr.sink.AllLogs() {
		assert.LessOrEqual(t, ld.LogRecordCount(), perBatch)
	}
}
