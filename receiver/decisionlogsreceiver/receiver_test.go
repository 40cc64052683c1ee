// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadatatest"
)

// refusingSink refuses (a retryable error, as memory_limiter does) while refusing is set. With a gate, each
// call says so on entered and waits for a value on gate; inflight and maxInflight count the calls inside.
type refusingSink struct {
	consumertest.LogsSink
	refusing atomic.Bool
	refused  atomic.Int64

	gate, entered         chan struct{}
	inflight, maxInflight atomic.Int64
}

// gated makes every later call wait for the test (set before the receiver gets data).
func (s *refusingSink) gated() {
	s.gate, s.entered = make(chan struct{}), make(chan struct{}, 1000)
}

func (s *refusingSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for m := s.maxInflight.Load(); n > m && !s.maxInflight.CompareAndSwap(m, n); m = s.maxInflight.Load() {
	}
	if s.gate != nil {
		s.entered <- struct{}{}
		<-s.gate
	}
	if s.refusing.Load() {
		s.refused.Add(1)
		return errors.New("data refused due to high memory usage")
	}
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

type testReceiver struct {
	t         *testing.T
	rcv       *decisionsReceiver
	sink      *refusingSink
	telemetry *componenttest.Telemetry
}

func startReceiver(t *testing.T, cfg *Config) *testReceiver {
	t.Helper()
	return startReceiverOn(t, cfg, componenttest.NewNopHost())
}

// startReceiverOn starts the receiver with host's extensions.
func startReceiverOn(t *testing.T, cfg *Config, host component.Host) *testReceiver {
	t.Helper()
	require.NoError(t, cfg.Validate())
	tr := &testReceiver{t: t, sink: &refusingSink{}, telemetry: componenttest.NewTelemetry()}
	rcv, err := newReceiver(cfg, metadatatest.NewSettings(tr.telemetry), tr.sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), host))
	tr.rcv = rcv
	t.Cleanup(func() {
		require.NoError(t, rcv.Shutdown(context.Background()))
		// The tests' own keep-alive connections, so that goleak sees only the receiver's goroutines.
		http.DefaultClient.CloseIdleConnections()
	})
	return tr
}

type gotDecision struct {
	policyresult.Decision
	Body  map[string]any
	Attrs map[string]any
}

func (tr *testReceiver) decisions() []gotDecision {
	var out []gotDecision
	for _, ld := range tr.sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					d, err := policyresult.ReadDecisionLogRecord(rl.Resource(), lr)
					require.NoError(tr.t, err)
					g := gotDecision{Decision: d, Attrs: lr.Attributes().AsRaw()}
					if lr.Body().Type() == pcommon.ValueTypeMap {
						g.Body = lr.Body().Map().AsRaw()
					}
					out = append(out, g)
				}
			}
		}
	}
	return out
}

// waitDecisions waits for n decisions, then checks that no more arrive.
func (tr *testReceiver) waitDecisions(n int, timeout time.Duration) []gotDecision {
	tr.t.Helper()
	require.Eventually(tr.t, func() bool { return tr.sink.LogRecordCount() >= n }, timeout, 5*time.Millisecond,
		"%d of %d decisions after %s", tr.sink.LogRecordCount(), n, timeout)
	// No signal exists for "the receiver has handled every byte it was sent": a stream connection's reader hands
	// lines to the pipeline without saying when its buffer is drained, and callers keep connections open. A
	// per-connection count of lines handled (a seam in ndjson.go) would replace this pause.
	time.Sleep(200 * time.Millisecond)
	got := tr.decisions()
	require.Len(tr.t, got, n, "exactly %d decisions", n)
	return got
}

func (tr *testReceiver) rejectedCount(listener, reason string) int64 {
	m, err := tr.telemetry.GetMetric("otelcol_receiver_decision_logs_rejected")
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		l, _ := dp.Attributes.Value("listener")
		r, _ := dp.Attributes.Value("reason")
		if l.AsString() == listener && r.AsString() == reason {
			n += dp.Value
		}
	}
	return n
}

func gatekeeperLine(i int) string {
	return fmt.Sprintf(`{"id":"2026-11-22T08:00:%02dZ","details":{"missing_labels":["owner"]},"eventType":"violation_admission",`+
		`"group":"constraints.gatekeeper.sh","version":"v1beta1","kind":"K8sRequiredLabels","name":"must-have-owner",`+
		`"message":"you must provide labels: {\"owner\"}","enforcementAction":"deny","resourceAPIVersion":"v1",`+
		`"resourceKind":"Namespace","resourceName":"ns-%d","operation":"CREATE","requestUsername":"alice"}`, i%60, i)
}

func unixConfig(t *testing.T) (*Config, string) {
	cfg := createDefaultConfig().(*Config)
	l := defaultNDJSON()
	// Unix socket paths are limited to about 100 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "dl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	l.Endpoint = filepath.Join(dir, "decisions.sock")
	cfg.NDJSON = []NDJSONConfig{l}
	return cfg, l.Endpoint
}

func TestNDJSONOverUnixSocketSkipsBadLines(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].MaxLineBytes = 2048
	tr := startReceiver(t, cfg)

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o660), st.Mode().Perm(), "socket_mode")

	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	lines := []string{
		gatekeeperLine(1),
		`{"this is": not json`,
		gatekeeperLine(2),
		`{"eventType":"violation_audited","kind":"K8sRequiredLabels","resourceName":` + `"` + strings.Repeat("x", 4096) + `"}`,
		``,
		`[1,2,3]`,
		gatekeeperLine(3),
	}
	_, err = c.Write([]byte(strings.Join(lines, "\n") + "\n"))
	require.NoError(t, err)
	require.NoError(t, c.Close())

	got := tr.waitDecisions(3, 10*time.Second)
	var names []string
	for _, d := range got {
		names = append(names, d.Resource.Name)
		assert.Equal(t, "gatekeeper", d.Source)
		assert.Equal(t, "K8sRequiredLabels", d.Policy)
		assert.Equal(t, policyresult.ActionDeny, d.Action)
		assert.Equal(t, "alice", d.User)
		assert.Equal(t, "CREATE", d.Operation)
		assert.Equal(t, "violation_admission", d.Body["eventType"], "the message itself is the body")
	}
	assert.Equal(t, []string{"ns-1", "ns-2", "ns-3"}, names, "in order, the bad lines skipped")
	listener := "unix:" + path
	assert.Equal(t, int64(2), tr.rejectedCount(listener, "event"))
	assert.Equal(t, int64(1), tr.rejectedCount(listener, "line_too_long"))
}

func TestNDJSONOverTCPManyConnectionsAndAStalledOne(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	l := defaultNDJSON()
	l.Transport, l.Endpoint = "tcp", "127.0.0.1:0"
	const conns, perConn = 200, 25
	// All from one address, all at once: none is evicted for another.
	l.MaxConnections, l.MaxSilentConnectionsPerSource = conns+1, conns+1
	cfg.NDJSON = []NDJSONConfig{l}
	tr := startReceiver(t, cfg)
	addr := tr.rcv.listeners[0].ln.Addr().String()

	// A client that sends half a line and stalls holds no one up.
	stalled, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer stalled.Close()
	_, err = stalled.Write([]byte(`{"eventType":"violation_aud`))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			var b strings.Builder
			for i := range perConn {
				b.WriteString(gatekeeperLine(c*perConn + i))
				b.WriteByte('\n')
			}
			_, err = conn.Write([]byte(b.String()))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	got := tr.waitDecisions(conns*perConn, 20*time.Second)
	seen := map[string]bool{}
	for _, d := range got {
		seen[d.Resource.Name] = true
	}
	assert.Len(t, seen, conns*perConn, "every decision once")

	// Malformed lines between good ones over TCP too.
	tr.sink.Reset()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = conn.Write([]byte(gatekeeperLine(90001) + "\n{\"eventType\": 42}\nnot json at all\n" + gatekeeperLine(90002) + "\n"))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	got = tr.waitDecisions(2, 10*time.Second)
	assert.Equal(t, "ns-90001", got[0].Resource.Name)
	assert.Equal(t, "ns-90002", got[1].Resource.Name)
	assert.Equal(t, int64(1), tr.rejectedCount("tcp:127.0.0.1:0", "event"), "not JSON")
	assert.Equal(t, int64(1), tr.rejectedCount("tcp:127.0.0.1:0", "not_decision"), "JSON, but neither OPA nor Gatekeeper")
}

func TestNDJSONBackpressureLosesNothing(t *testing.T) {
	cfg, path := unixConfig(t)
	cfg.MaxBatchRecords = 10
	tr := startReceiver(t, cfg)
	tr.sink.refusing.Store(true)

	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	const n = 500
	done := make(chan error, 1)
	go func() {
		var b strings.Builder
		for i := range n {
			b.WriteString(gatekeeperLine(i) + "\n")
		}
		_, err := c.Write([]byte(b.String()))
		done <- errors.Join(err, c.Close())
	}()
	require.Eventually(t, func() bool { return tr.sink.refused.Load() >= 3 }, 10*time.Second, 10*time.Millisecond)
	assert.Zero(t, tr.sink.LogRecordCount())
	tr.sink.refusing.Store(false)
	require.NoError(t, <-done)
	got := tr.waitDecisions(n, 20*time.Second)
	names := make([]string, 0, n)
	for _, d := range got {
		names = append(names, d.Resource.Name)
	}
	sort.Strings(names)
	assert.Equal(t, n, len(compact(names)), "no decision lost or duplicated while the pipeline refused")
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func TestStaleSocketIsReplacedButOtherFilesAreNot(t *testing.T) {
	cfg, path := unixConfig(t)
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	// Leave the socket file behind, as a crashed collector would.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	startReceiver(t, cfg)

	cfg2, path2 := unixConfig(t)
	require.NoError(t, os.WriteFile(path2, []byte("not a socket"), 0o600))
	rcv, err := newReceiver(cfg2, metadatatest.NewSettings(componenttest.NewTelemetry()), consumertest.NewNop())
	require.NoError(t, err)
	assert.ErrorContains(t, rcv.Start(context.Background(), componenttest.NewNopHost()), "exists and is not a socket")
}
