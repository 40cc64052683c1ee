// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testcerts"
)

// The attacks of issue 14 on the decision_logs receiver: the OPA endpoint (uploads that decompress or decode
// into far more than they are, many large uploads at once, a trickled body) and the NDJSON listeners (held
// lines, idle connections, long lines, a TLS handshake that never ends, a second collector on the socket).
// The receiver's defaults bound each (receiver/decisionlogsreceiver/README.md, "Memory and time bounds").

const rejectedMetric = "otelcol_receiver_decision_logs_rejected"

// The receiver's defaults that the attacks run into.
const (
	defaultMaxBodyBytes   = 8 << 20
	defaultMaxConnections = 16
	// defaultMaxSilentPerSource is ndjson[]::max_silent_connections_per_source: over TCP, the connections from
	// one address that have not sent a complete line yet.
	defaultMaxSilentPerSource = 8
	defaultOPAMaxConnections  = 256
	defaultReadHeaderTimeout  = 10 * time.Second
	defaultLineTimeout        = 10 * time.Second
	defaultReadTimeout        = 15 * time.Second
	defaultHandshakeTimeout   = 10 * time.Second
	// cutOffMargin is how much later than its timeout a connection may be closed on a loaded machine.
	cutOffMargin = 15 * time.Second
)

// closedOnArrival reads the connections closed because the listener was full: refused (too_many_connections)
// or, since issue 29, silent ones evicted for a newer one (evicted).
func (tg *Target) closedOnArrival() float64 {
	c := tg.counted("too_many_connections", "evicted")
	return c["too_many_connections"] + c["evicted"]
}

// counted reads the rejections of the given reasons.
func (tg *Target) counted(reasons ...string) map[string]float64 {
	out := map[string]float64{}
	for _, r := range reasons {
		out[r] = tg.Metric(rejectedMetric, fmt.Sprintf("reason=%q", r))
	}
	return out
}

// outcome is what one client of an attack saw: an HTTP status, how long it took, or an error.
type outcome struct {
	code int
	took time.Duration
	err  error
}

// clients runs n attack clients at once and waits for them all, failing as soon as the collector exits or
// passes its memory bound: an attack that works (on an older build) is stopped before it takes the machine.
// The clients must not use t: the test may end before they do.
func (tg *Target) clients(n int, timeout time.Duration, client func(i int) outcome) []outcome {
	tg.t.Helper()
	out := make([]outcome, n)
	var left atomic.Int64
	left.Store(int64(n))
	for i := range n {
		go func() {
			out[i] = client(i)
			left.Add(-1)
		}()
	}
	tg.WaitBounded(timeout, func() error {
		if l := left.Load(); l > 0 {
			return fmt.Errorf("%d of %d attack clients not done", l, n)
		}
		return nil
	})
	return out
}

// bothConfigs runs an attack against the default config and the DaemonSet's (whose OPA endpoint wants the
// token: the attacker has it, as a compromised OPA would).
func bothConfigs(t *testing.T, attack func(t *testing.T, tg *Target)) {
	t.Run("default", func(t *testing.T) { attack(t, StartDefault(t, "")) })
	t.Run("daemonset", func(t *testing.T) { attack(t, StartDaemonSet(t, "")) })
}

// gzipStream compresses what write writes, without holding it uncompressed.
func gzipStream(write func(w io.Writer)) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	bw := bufio.NewWriterSize(zw, 64<<10)
	write(bw)
	_ = bw.Flush()
	_ = zw.Close()
	return buf.Bytes()
}

// repeat writes s n times.
func repeat(w io.Writer, s string, n int) {
	chunk := strings.Repeat(s, 4096)
	for ; n >= 4096; n -= 4096 {
		_, _ = io.WriteString(w, chunk)
	}
	_, _ = io.WriteString(w, strings.Repeat(s, n))
}

// arrayBomb is one event {"a":[0,0,…]} of n elements, gzip compressed.
func arrayBomb(n int) []byte {
	return gzipStream(func(w io.Writer) {
		_, _ = io.WriteString(w, `[{"a":[`)
		repeat(w, "0,", n-1)
		_, _ = io.WriteString(w, "0]}]")
	})
}

// emptyEventsBomb is an upload of n events {}, gzip compressed.
func emptyEventsBomb(n int) []byte {
	return gzipStream(func(w io.Writer) {
		_, _ = io.WriteString(w, "[")
		repeat(w, "{},", n-1)
		_, _ = io.WriteString(w, "{}]")
	})
}

// uploadBombs posts the bombs one after the other, rounds times, to each config, and asserts the answers and
// that each bomb was counted with its reason.
func uploadBombs(t *testing.T, name string, bombs [][]byte, wantCodes []int, reasons ...string) {
	bothConfigs(t, func(t *testing.T, tg *Target) {
		rounds := pick(1, 5)
		r := tg.Attack(name, func() map[string]float64 {
			for range rounds {
				var codes []int
				for _, b := range bombs {
					o := tg.clients(1, 2*time.Minute, func(int) outcome {
						code, err := tg.PostOPA(context.Background(), b, true)
						return outcome{code: code, err: err}
					})[0]
					require.NoError(t, o.err)
					codes = append(codes, o.code)
				}
				assert.Equal(t, wantCodes, codes)
			}
			return tg.counted(reasons...)
		})
		for _, reason := range reasons {
			assert.GreaterOrEqual(t, r.Counted[reason], float64(rounds), reason)
		}
	})
}

// TestDecisionLogsGzipArrayBomb: 32 KiB of gzip holding one event {"a":[0,0,…]} of 16 million elements
// (32 MB), which took the collector from 54 MiB to 1.1 GiB, is refused for its size; one of 4 million (8 MB),
// within the body limit but 110 MB as a record, has its event skipped.
func TestDecisionLogsGzipArrayBomb(t *testing.T) {
	uploadBombs(t, "opa-gzip-array-bomb", [][]byte{arrayBomb(16_000_000), arrayBomb(4_000_000)},
		[]int{http.StatusRequestEntityTooLarge, http.StatusOK}, "body_too_large", "event_too_large")
}

// TestDecisionLogsEmptyEventsBomb: 32 KiB of gzip holding 11 million events {} (33 MB), which passed 4 GiB, is
// refused for its size; 2.7 million (8 MB), within the body limit, for its events.
func TestDecisionLogsEmptyEventsBomb(t *testing.T) {
	uploadBombs(t, "opa-empty-events-bomb", [][]byte{emptyEventsBomb(11_000_000), emptyEventsBomb(2_700_000)},
		[]int{http.StatusRequestEntityTooLarge, http.StatusRequestEntityTooLarge}, "body_too_large", "too_many_events")
}

// maxSizeUpload is a valid upload just under the default max_request_body_size: 8 decisions with an input of
// about 1 MiB each.
func maxSizeUpload(id string) []byte {
	return gzipStream(func(w io.Writer) {
		_, _ = io.WriteString(w, "[")
		for i := range 8 {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `{"decision_id":"%s-%d","path":"max/size","result":true,"input":{"blob":"`, id, i)
			repeat(w, "x", defaultMaxBodyBytes/8-200)
			_, _ = io.WriteString(w, `"}}`)
		}
		_, _ = io.WriteString(w, "]")
	})
}

// TestDecisionLogsConcurrentMaxSizeUploads: many uploads of max_request_body_size at once. The bodies held at
// once are bounded (opa::max_concurrent_requests × max_request_body_size); the others are answered 429, which
// OPA retries.
func TestDecisionLogsConcurrentMaxSizeUploads(t *testing.T) {
	n := pick(24, 64)
	bothConfigs(t, func(t *testing.T, tg *Target) {
		bodies := make([][]byte, n)
		for u := range bodies {
			bodies[u] = maxSizeUpload(fmt.Sprintf("max-%d", u))
		}
		var ok, busy int
		r := tg.Attack("opa-concurrent-max-size-uploads", func() map[string]float64 {
			for _, o := range tg.clients(n, 2*time.Minute, func(u int) outcome {
				code, err := tg.PostOPA(context.Background(), bodies[u], true)
				return outcome{code: code, err: err}
			}) {
				require.NoError(t, o.err)
				switch o.code {
				case http.StatusOK:
					ok++
				case http.StatusTooManyRequests:
					busy++
				default:
					t.Errorf("upload answered %d", o.code)
				}
			}
			return tg.counted("busy")
		})
		t.Logf("%d uploads: %d accepted, %d answered 429", n, ok, busy)
		assert.Positive(t, busy, "some uploads found no room")
		assert.GreaterOrEqual(t, r.Counted["busy"], float64(busy))
	})
}

// trickle sends an upload's headers and then its body a byte every half second, from an address of its own (an
// attacker's pod, not the legitimate producer's), and returns the status the collector answered with and when, or
// an error if it did not answer within wait.
func trickle(tg *Target, wait time.Duration) outcome {
	code, took, err := trickleUpload(tg, wait)
	return outcome{code: code, took: took, err: err}
}

func trickleUpload(tg *Target, wait time.Duration) (int, time.Duration, error) {
	addr := strings.TrimSuffix(strings.TrimPrefix(tg.OPAURL(), "http://"), "/logs")
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	start := time.Now()
	auth := ""
	if tg.Token != "" {
		auth = "Authorization: Bearer " + tg.Token + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "POST /logs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: 1048576\r\n\r\n[", addr, auth); err != nil {
		return 0, 0, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("{")); err != nil {
					return
				}
			}
		}
	}()
	if err := c.SetReadDeadline(start.Add(wait)); err != nil {
		return 0, 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, time.Since(start), fmt.Errorf("no answer after %s: %w", time.Since(start).Round(time.Second), err)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}

// TestDecisionLogsTrickledBodies: uploads whose bodies come a byte every half second were never cut off; now
// read_timeout ends them, and they hold only the bytes they sent, not a turn that uploads beside them need.
func TestDecisionLogsTrickledBodies(t *testing.T) {
	n := pick(20, 200)
	tg := StartDefault(t, "")
	closed := 0
	r := tg.Attack("opa-trickled-bodies", func() map[string]float64 {
		for _, o := range tg.clients(n, defaultReadTimeout+2*cutOffMargin, func(int) outcome {
			return trickle(tg, defaultReadTimeout+cutOffMargin)
		}) {
			if o.err != nil {
				// Dialled at once from one address, more than opa::max_silent_connections_per_source (200
				// against 64 at full scale): one accepted before the endpoint read the earlier ones' headers
				// evicts that address's oldest, which never got to trickle. The legitimate producer's address
				// is another, so none of its connections is evicted.
				closed++
				continue
			}
			assert.Equal(t, http.StatusRequestTimeout, o.code, "the trickled upload is cut off")
			assert.GreaterOrEqual(t, o.took, defaultReadTimeout-time.Second)
		}
		return tg.counted("timeout", "evicted")
	})
	assert.LessOrEqual(t, float64(closed), r.Counted["evicted"], "an upload is cut off, or its connection was evicted and counted")
	assert.GreaterOrEqual(t, r.Counted["timeout"], float64(n-closed))
	assert.Positive(t, r.Counted["timeout"], "trickled uploads are cut off")
	assert.Zero(t, r.LegitRefusals, "uploads beside the trickled ones are not refused")
}

// streamDecision sends one decision as an NDJSON line (OPA's event format, which the listener's auto format
// reads) over connections from dial until it is delivered: a connection the listener refused takes the line
// with it.
func (tg *Target) streamDecision(t *testing.T, id string, dial func() (net.Conn, error)) {
	t.Helper()
	line := fmt.Sprintf(`{"decision_id":%q,"path":"stream/legit","result":true,"timestamp":"2026-11-23T08:00:00Z"}`+"\n", id)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := dial(); err == nil {
			_, _ = c.Write([]byte(line))
			_ = c.Close()
			for wait := time.Now().Add(3 * time.Second); time.Now().Before(wait); time.Sleep(100 * time.Millisecond) {
				if tg.Decisions()[id] > 0 {
					return
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the stream decision %s was not delivered within a minute", id)
}

func (tg *Target) dialSocket() (net.Conn, error) { return net.Dial("unix", tg.SocketPath()) }

// holdConnections opens n connections with dial, writes prefix on each, and waits until the collector has
// closed every one: the connections it did not keep at once, those it kept at a timeout. It returns how many
// it kept (closed after more than a second), and fails the test for those not closed within wait.
func (tg *Target) holdConnections(t *testing.T, n int, dial func() (net.Conn, error), prefix []byte, wait time.Duration) (kept int) {
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := dial()
		require.NoError(t, err)
		defer c.Close()
		conns[i] = c
	}
	open := 0
	for _, o := range tg.clients(n, wait+cutOffMargin, func(i int) outcome {
		start := time.Now()
		// A refused connection may end the write early.
		_, _ = conns[i].Write(prefix)
		_ = conns[i].SetReadDeadline(start.Add(wait))
		_, err := io.Copy(io.Discard, conns[i])
		return outcome{took: time.Since(start), err: err}
	}) {
		var ne net.Error
		switch {
		case errors.As(o.err, &ne) && ne.Timeout():
			open++
		case o.took > time.Second:
			kept++
		}
	}
	assert.Zero(t, open, "connections the collector neither refused nor closed within %s", wait)
	return kept
}

// TestDecisionLogsHeldLines: 200 connections each holding a 1 MiB line without its newline kept 510 MiB for
// as long as they liked. Now the listener keeps max_connections of them, and only for line_timeout.
func TestDecisionLogsHeldLines(t *testing.T) {
	const n = 200
	line := bytes.Repeat([]byte("x"), 1<<20)
	line[0] = '{'
	bothConfigs(t, func(t *testing.T, tg *Target) {
		var kept int
		r := tg.Attack("ndjson-held-lines", func() map[string]float64 {
			kept = tg.holdConnections(t, n, tg.dialSocket, line, defaultLineTimeout+cutOffMargin)
			return tg.counted("too_many_connections", "evicted", "line_timeout")
		})
		t.Logf("%d connections: %d kept until line_timeout", n, kept)
		assert.LessOrEqual(t, kept, defaultMaxConnections)
		assert.GreaterOrEqual(t, r.Counted["too_many_connections"]+r.Counted["evicted"], float64(n-defaultMaxConnections))
		assert.GreaterOrEqual(t, r.Counted["line_timeout"], float64(kept))
		tg.streamDecision(t, "stream-after-held-lines", tg.dialSocket)
	})
}

// TestDecisionLogsIdleConnections: 2,000 idle connections were all kept, forever. Now the listener keeps
// max_connections and closes the others at once.
func TestDecisionLogsIdleConnections(t *testing.T) {
	n := pick(2000, 2000)
	hold := pick(time.Duration(0), time.Minute)
	tg := StartDefault(t, "")
	r := tg.Attack("ndjson-idle-connections", func() map[string]float64 {
		var conns []net.Conn
		for range n {
			c, err := tg.dialSocket()
			require.NoError(t, err)
			conns = append(conns, c)
		}
		// The refused ones are closed at once: wait until the collector counted them all.
		tg.WaitBounded(30*time.Second, func() error {
			if got := tg.closedOnArrival(); got < float64(n-defaultMaxConnections) {
				return fmt.Errorf("%.0f connections refused", got)
			}
			return nil
		})
		time.Sleep(hold) // full scale: legitimate uploads go on while the kept ones idle
		for _, c := range conns {
			c.Close()
		}
		return tg.counted("too_many_connections", "evicted")
	})
	assert.Equal(t, float64(n-defaultMaxConnections), r.Counted["too_many_connections"]+r.Counted["evicted"])
	tg.streamDecision(t, "stream-after-idle-connections", tg.dialSocket)
}

// TestDecisionLogsOPAIdleConnections: connections to the OPA endpoint that never send a request each held a
// goroutine and its buffers until read_header_timeout, as many as an attacker opened. Now the endpoint holds
// opa::max_connections and closes the others as they come; the held ones go at read_header_timeout, after
// which uploads get through again (OPA retries meanwhile).
func TestDecisionLogsOPAIdleConnections(t *testing.T) {
	n := pick(2000, 10000)
	tg := StartDefault(t, "")
	r := tg.Attack("opa-idle-connections", func() map[string]float64 {
		var conns []net.Conn
		for range n {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tg.Ports.OPA))
			require.NoError(t, err)
			conns = append(conns, c)
		}
		tg.WaitBounded(30*time.Second, func() error {
			if got := tg.closedOnArrival(); got < float64(n-defaultOPAMaxConnections) {
				return fmt.Errorf("%.0f connections refused", got)
			}
			return nil
		})
		// The held ones are closed by the collector at read_header_timeout: each reads EOF.
		deadline := time.Now().Add(defaultReadHeaderTimeout + cutOffMargin)
		for _, c := range conns {
			require.NoError(t, c.SetReadDeadline(deadline))
			_, err := c.Read(make([]byte, 1))
			require.ErrorIs(t, err, io.EOF, "every idle connection is closed by the collector")
			c.Close()
		}
		return tg.counted("too_many_connections", "evicted")
	})
	assert.GreaterOrEqual(t, r.Counted["too_many_connections"]+r.Counted["evicted"], float64(n-defaultOPAMaxConnections))
}

// TestDecisionLogsLongLinesOnOneStream: 20 lines of 1 MiB on one stream took the collector to 482 MiB, each
// array element becoming a pdata value. Now each event is priced before it is built, and skipped.
func TestDecisionLogsLongLinesOnOneStream(t *testing.T) {
	lines, streams := 20, pick(1, 5)
	var bomb bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&bomb, `{"decision_id":"long-%d","path":"bomb","result":[`, i)
		repeat(&bomb, "0,", 1<<19-40)
		bomb.WriteString("0]}\n")
	}
	tg := StartDefault(t, "")
	r := tg.Attack("ndjson-long-lines", func() map[string]float64 {
		for _, o := range tg.clients(streams, 2*time.Minute, func(s int) outcome {
			c, err := tg.dialSocket()
			if err != nil {
				return outcome{err: err}
			}
			defer c.Close()
			if _, err = c.Write(bomb.Bytes()); err != nil {
				return outcome{err: err}
			}
			// The stream goes on after the long lines.
			_, err = fmt.Fprintf(c, `{"decision_id":"after-long-lines-%d","path":"stream/legit","result":true}`+"\n", s)
			return outcome{err: err}
		}) {
			require.NoError(t, o.err)
		}
		ids := make([]string, streams)
		for s := range ids {
			ids[s] = fmt.Sprintf("after-long-lines-%d", s)
		}
		tg.WaitDecisions(ids, time.Minute)
		return tg.counted("event_too_large")
	})
	assert.Equal(t, float64(lines*streams), r.Counted["event_too_large"])
}

// TestDecisionLogsTLSHandshakeNeverFinishes: clients of a TLS listener that connect and never say hello were
// kept forever; now they are closed at handshake_timeout (and those beyond max_connections at once).
func TestDecisionLogsTLSHandshakeNeverFinishes(t *testing.T) {
	n := pick(12, 200)
	certs := testcerts.New(t)
	dir := t.TempDir()
	files := certs.Write(t, dir)
	addr := fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t))
	tg := StartDefault(t, fmt.Sprintf(`
receivers:
  decision_logs:
    ndjson:
      - transport: unix
        endpoint: ./data/decisions.sock
        socket_mode: "0600"
      - transport: tcp
        endpoint: %s
        tls:
          cert_file: %s
          key_file: %s
`, addr, files.ServerCert, files.ServerKey))
	dial := func() (net.Conn, error) { return net.Dial("tcp", addr) }
	var kept int
	r := tg.Attack("ndjson-tls-handshake", func() map[string]float64 {
		kept = tg.holdConnections(t, n, dial, nil, defaultHandshakeTimeout+cutOffMargin)
		return tg.counted("tls_handshake", "too_many_connections", "evicted")
	})
	t.Logf("%d connections: %d kept until handshake_timeout", n, kept)
	// All from one address: it keeps max_silent_connections_per_source of them, each more evicting its oldest.
	held := min(n, defaultMaxConnections, defaultMaxSilentPerSource)
	assert.Equal(t, float64(held), r.Counted["tls_handshake"])
	assert.Equal(t, float64(n-held), r.Counted["too_many_connections"]+r.Counted["evicted"])
	tg.streamDecision(t, "tls-after-handshake-attack", func() (net.Conn, error) {
		return tls.Dial("tcp", addr, certs.ClientTLS(t, false))
	})
}

// TestDecisionLogsTwoCollectorsOnOneSocket: a second collector started on the socket of a running one took it
// over, and the first one's shutdown then deleted the second one's socket. Now the second does not start; the
// first keeps its socket and removes it when it stops; then the second starts.
func TestDecisionLogsTwoCollectorsOnOneSocket(t *testing.T) {
	first := StartDefault(t, "")
	socket := first.SocketPath()
	before, err := os.Lstat(socket)
	require.NoError(t, err)

	startSecond := func() (*collectortest.Collector, string) {
		dir := t.TempDir()
		overlay, p := collectortest.DefaultConfigOverlay(t, dir)
		extra := writeFile(t, filepath.Join(dir, "socket.yaml"), fmt.Sprintf(`
receivers:
  decision_logs:
    ndjson:
      - transport: unix
        endpoint: %s
        socket_mode: "0600"
`, socket))
		c := collectortest.StartEnv(t, dir, []string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")},
			collectortest.DefaultConfig(t), overlay, extra)
		return c, collectortest.HealthURL(p.Health)
	}

	var output string
	r := first.Attack("ndjson-second-collector-on-socket", func() map[string]float64 {
		second, _ := startSecond()
		first.WaitBounded(30*time.Second, func() error {
			select {
			case <-second.Exited():
				return nil
			default:
				return errors.New("the second collector runs on the first one's socket")
			}
		})
		output = second.Output()
		first.streamDecision(t, "stream-beside-second-collector", first.dialSocket)
		return map[string]float64{"second_collector_refused": 1}
	})
	assert.Equal(t, float64(1), r.Counted["second_collector_refused"])
	assert.Contains(t, output, socket+" is in use", "the second collector says why")
	after, err := os.Lstat(socket)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the first collector's socket is in place")

	first.C.Stop()
	_, err = os.Lstat(socket)
	assert.ErrorIs(t, err, os.ErrNotExist, "the first collector removed its own socket")
	second, health := startSecond()
	second.WaitHealthy(health)
	c, err := net.Dial("unix", socket)
	require.NoError(t, err, "the second collector serves the socket now")
	c.Close()
	second.Stop()
}
