// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package badinput

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"
)

const (
	rejectedMetric = "otelcol_receiver_decision_logs_rejected"
	// opaBodyLimit is the OPA endpoint's max_request_body_size in these tests: small enough that a bomb's
	// allowed expansion is cheap, large enough for real uploads.
	opaBodyLimit = 4 * mib
	// lineLimit is the NDJSON listeners' max_line_bytes (the default).
	lineLimit = 1 * mib
)

// dlReceiver is a decision_logs receiver started through its public factory, with its sink and telemetry.
type dlReceiver struct {
	t    *testing.T
	sink *consumertest.LogsSink
	tel  *componenttest.Telemetry
	url  string // the OPA endpoint
	sock string // the NDJSON Unix socket
}

func startDecisionLogs(t *testing.T) *dlReceiver {
	t.Helper()
	f := decisionlogsreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*decisionlogsreceiver.Config)

	ports, err := freeport.Ports(1)
	require.NoError(t, err)
	sc := confighttp.NewDefaultServerConfig()
	sc.NetAddr.Endpoint = "127.0.0.1:" + strconv.Itoa(ports[0])
	sc.MaxRequestBodySize = opaBodyLimit
	cfg.OPA = configoptional.Some(decisionlogsreceiver.OPAConfig{ServerConfig: sc, Path: "/logs"})

	// Unix socket paths are limited to about 100 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "badinput")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	cfg.NDJSON = []decisionlogsreceiver.NDJSONConfig{{
		Transport: "unix", Endpoint: sock, SocketMode: "0600", Format: decisionlogsreceiver.FormatAuto, MaxLineBytes: lineLimit,
	}}
	require.NoError(t, cfg.Validate())

	dr := &dlReceiver{t: t, sink: new(consumertest.LogsSink), tel: componenttest.NewTelemetry(),
		url: "http://" + sc.NetAddr.Endpoint + "/logs", sock: sock}
	set := receivertest.NewNopSettings(f.Type())
	set.TelemetrySettings = dr.tel.NewTelemetrySettings()
	rcv, err := f.CreateLogs(context.Background(), set, cfg, dr.sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, rcv.Shutdown(context.Background()))
		require.NoError(t, dr.tel.Shutdown(context.Background()))
	})
	return dr
}

// rejected is otelcol_receiver_decision_logs_rejected{listener, reason}.
func (dr *dlReceiver) rejected(listener, reason string) int64 {
	if listener == "unix" {
		listener = "unix:" + dr.sock
	}
	return counter(dr.t, dr.tel, rejectedMetric, map[string]string{"listener": listener, "reason": reason})
}

// rejectedAll is every rejection, whatever the listener and reason.
func (dr *dlReceiver) rejectedAll() int64 {
	return counter(dr.t, dr.tel, rejectedMetric, nil)
}

// decisions are the records delivered so far.
func (dr *dlReceiver) decisions() []policyresult.Decision {
	dr.t.Helper()
	var out []policyresult.Decision
	for _, ld := range dr.sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					d, err := policyresult.ReadDecisionLogRecord(rl.Resource(), lr)
					require.NoError(dr.t, err)
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// waitRecords waits until n records were delivered, then checks that no more arrive.
func (dr *dlReceiver) waitRecords(n int) {
	dr.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for dr.sink.LogRecordCount() < n {
		if time.Now().After(deadline) {
			dr.t.Fatalf("%d of %d records after 15s", dr.sink.LogRecordCount(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	require.Equal(dr.t, n, dr.sink.LogRecordCount(), "exactly %d records", n)
}

// post uploads body to the OPA endpoint, gzip-encoded when encoding is "gzip".
func (dr *dlReceiver) post(body []byte, encoding string) (int, string) {
	dr.t.Helper()
	req, err := http.NewRequest(http.MethodPost, dr.url, bytes.NewReader(body))
	require.NoError(dr.t, err)
	req.Header.Set("Content-Type", "application/json")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(dr.t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(msg))
}

// stream writes data to a new connection to the NDJSON socket and closes it.
func (dr *dlReceiver) stream(data []byte) {
	dr.t.Helper()
	c, err := net.Dial("unix", dr.sock)
	require.NoError(dr.t, err)
	_, err = c.Write(data)
	require.NoError(dr.t, err)
	require.NoError(dr.t, c.Close())
}

// stillWorks checks that a good upload and a good line right after the bad input are both delivered.
func (dr *dlReceiver) stillWorks() {
	dr.t.Helper()
	before := dr.sink.LogRecordCount()
	code, msg := dr.post(fmt.Appendf(nil, "[%s]", opaEvent("after-http")), "")
	require.Equal(dr.t, http.StatusOK, code, msg)
	dr.stream([]byte(gatekeeperLine("after-stream") + "\n"))
	dr.waitRecords(before + 2)
	ds := dr.decisions()
	assert.Equal(dr.t, "after-http", ds[before].ID)
	assert.Equal(dr.t, "after-stream", ds[before+1].Resource.Name)
}

func opaEvent(id string) string {
	return fmt.Sprintf(`{"decision_id":%q,"path":"kubernetes/admission","input":{"request":{"operation":"CREATE","userInfo":{"username":"alice"}}},`+
		`"result":{"allowed":true},"timestamp":"2026-11-22T08:00:00Z"}`, id)
}

func gatekeeperLine(name string) string {
	return `{"eventType":"violation_admission","group":"constraints.gatekeeper.sh","version":"v1beta1","kind":"K8sRequiredLabels",` +
		`"name":"must-have-owner","message":"you must provide labels","enforcementAction":"deny","resourceAPIVersion":"v1",` +
		`"resourceKind":"Namespace","resourceName":"` + name + `","operation":"CREATE","requestUsername":"alice"}`
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// gzipBomb is a small gzip body that expands to total bytes of zeros: one member compressing a MiB of zeros
// (about 1 KiB), repeated; gzip readers read concatenated members as one stream.
func gzipBomb(t *testing.T, total int) []byte {
	member := gzipped(t, make([]byte, mib))
	return bytes.Repeat(member, total/mib)
}

// deepNesting is n '[' and nothing else.
func deepNesting(n int) []byte { return bytes.Repeat([]byte{'['}, n) }

func TestOPAEndpointBadInput(t *testing.T) {
	good := func(id string) string { return opaEvent(id) }
	cases := []struct {
		name     string
		body     []byte
		encoding string
		status   int
		reason   string // the rejected{listener=opa} reason counted, "" for none
		rejected int64  // how many were counted with reason
		ids      []string
		// maxAlloc bounds what the request cost the process (client and receiver), when set.
		maxAlloc uint64
		maxTime  time.Duration
		check    func(t *testing.T, ds []policyresult.Decision)
		// uncounted: rejected before the receiver sees the request.
		uncounted bool
	}{
		{
			name: "truncated gzip body", encoding: "gzip",
			body: func() []byte {
				b := gzipped(t, fmt.Appendf(nil, "[%s,%s]", good("a"), good("b")))
				return b[:len(b)/2]
			}(),
			status: http.StatusBadRequest, reason: "encoding", rejected: 1,
		},
		{
			name: "gzip bomb: 1 KiB per MiB, 1 GiB expanded", encoding: "gzip",
			body:   gzipBomb(t, 1<<30),
			status: http.StatusRequestEntityTooLarge, reason: "body_too_large", rejected: 1,
			// The expansion is cut at max_request_body_size (4 MiB): io.ReadAll's doublings stay below 16 MiB.
			maxAlloc: 64 * mib, maxTime: 20 * time.Second,
		},
		{
			name:   "plain body over max_request_body_size",
			body:   fmt.Appendf(nil, `[{"decision_id":"big","input":%q}]`, strings.Repeat("x", opaBodyLimit)),
			status: http.StatusRequestEntityTooLarge, reason: "body_too_large", rejected: 1,
			maxAlloc: 64 * mib,
		},
		{
			name:   "100,000 nested arrays",
			body:   deepNesting(100_000),
			status: http.StatusBadRequest, reason: "json", rejected: 1,
			maxAlloc: 16 * mib, maxTime: 2 * time.Second,
		},
		{
			name:   "100,000 nested arrays inside an event",
			body:   fmt.Appendf(nil, `[%s,{"decision_id":"deep","input":%s}]`, good("ok"), deepNesting(100_000)),
			status: http.StatusBadRequest, reason: "json", rejected: 1,
			maxAlloc: 16 * mib, maxTime: 2 * time.Second,
		},
		{
			name:   "100,000 nested objects inside an event",
			body:   fmt.Appendf(nil, `[{"decision_id":"deep","input":%s}]`, strings.Repeat(`{"a":`, 100_000)),
			status: http.StatusBadRequest, reason: "json", rejected: 1,
			maxAlloc: 16 * mib, maxTime: 2 * time.Second,
		},
		{
			name:   "invalid UTF-8 in strings",
			body:   []byte("[{\"decision_id\":\"utf\xff8\",\"path\":\"kube\xc3\",\"input\":{\"request\":{\"userInfo\":{\"username\":\"al\xe2\x82ice\"}}},\"result\":{\"allowed\":false,\"reason\":\"\xfe\xfe\"}}]"),
			status: http.StatusOK, ids: []string{"utf\uFFFD8"},
			check: func(t *testing.T, ds []policyresult.Decision) {
				// Repaired: every invalid byte sequence becomes U+FFFD, as encoding/json does.
				assert.Equal(t, "kube\uFFFD", ds[0].Policy)
				for _, d := range ds {
					assert.True(t, utf8.ValidString(d.ID) && utf8.ValidString(d.Policy) && utf8.ValidString(d.User))
				}
			},
		},
		{
			name: "wrong types: decision_id a number",
			body: fmt.Appendf(nil, `[%s,{"decision_id":42,"path":"p","result":true},%s]`, good("a"), good("b")),
			// The bad event is skipped and counted; the others are delivered.
			status: http.StatusOK, reason: "event", rejected: 1, ids: []string{"a", "b"},
		},
		{
			name: "wrong types: result an object, input a string",
			body: fmt.Appendf(nil, `[{"decision_id":"obj","path":"p","result":{"x":{"y":[1,2]}},"input":"just a string"},%s]`, good("b")),
			// Both are readable decisions: a result that is no allow/deny answer has no outcome.
			status: http.StatusOK, ids: []string{"obj", "b"},
			check: func(t *testing.T, ds []policyresult.Decision) {
				assert.Nil(t, ds[0].Allowed)
				assert.Equal(t, "p", ds[0].Policy)
			},
		},
		{
			name:   "wrong types: path an array, timestamp a number",
			body:   fmt.Appendf(nil, `[{"decision_id":"p","path":["x"]},{"decision_id":"t","timestamp":1700000000},%s]`, good("c")),
			status: http.StatusOK, reason: "event", rejected: 2, ids: []string{"c"},
		},
		{
			name: "good and bad events mixed",
			body: fmt.Appendf(nil, `[%s,{"decision_id":1},%s,"a string",%s,[1,2],%s,null,%s,{"decision_id":"x","timestamp":"yesterday"},%s]`,
				good("1"), good("2"), good("3"), good("4"), good("5"), good("6")),
			status: http.StatusOK, reason: "event", rejected: 5, ids: []string{"1", "2", "3", "4", "5", "6"},
		},
		{
			name:   "not an array",
			body:   []byte(`"decisions"`),
			status: http.StatusBadRequest, reason: "json", rejected: 1,
		},
		{
			name:   "array cut short",
			body:   fmt.Appendf(nil, `[%s,%s`, good("a"), good("b")[:40]),
			status: http.StatusBadRequest, reason: "json", rejected: 1,
		},
		{
			name:   "binary garbage",
			body:   []byte("\x00\x01\x02\xff\xfe\x1f\x8b\x08garbage"),
			status: http.StatusBadRequest, reason: "json", rejected: 1,
		},
		{
			name: "binary garbage declared gzip", encoding: "gzip",
			body: []byte("\x00\x01\x02\xff\xfe garbage"),
			// confighttp's decompressor answers before the receiver's handler runs, so the receiver's
			// rejected metric does not count it (a truncated stream with a valid header is counted).
			status: http.StatusBadRequest, uncounted: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dr := startDecisionLogs(t)
			before := allocated()
			start := time.Now()
			code, msg := dr.post(tc.body, tc.encoding)
			took := time.Since(start)
			grew := allocated() - before
			t.Logf("status %d in %s, %.1f MiB allocated: %s", code, took.Round(time.Millisecond), float64(grew)/mib, msg)
			require.Equal(t, tc.status, code, msg)
			if tc.maxAlloc > 0 {
				assert.Less(t, grew, tc.maxAlloc, "bytes allocated while the request was handled")
			}
			if tc.maxTime > 0 {
				assert.Less(t, took, tc.maxTime)
			}
			if tc.reason != "" {
				assert.Equal(t, tc.rejected, dr.rejected("opa", tc.reason), "rejected{opa,%s}", tc.reason)
				assert.Equal(t, tc.rejected, dr.rejectedAll(), "nothing else counted")
			} else if tc.status == http.StatusOK || tc.uncounted {
				assert.Zero(t, dr.rejectedAll(), "nothing counted")
			}
			if tc.status == http.StatusOK {
				dr.waitRecords(len(tc.ids))
				var ids []string
				for _, d := range dr.decisions() {
					ids = append(ids, d.ID)
				}
				assert.Equal(t, tc.ids, ids, "the good events, in order")
				if tc.check != nil {
					tc.check(t, dr.decisions())
				}
			} else {
				assert.Zero(t, dr.sink.LogRecordCount(), "a rejected upload delivers nothing")
			}
			dr.stillWorks()
		})
	}
}

func TestNDJSONStreamBadInput(t *testing.T) {
	line := func(name string) string { return gatekeeperLine(name) + "\n" }
	cases := []struct {
		name     string
		data     []byte
		reasons  map[string]int64 // rejected{unix,reason}
		names    []string         // the resource names of the records delivered, in order
		maxAlloc uint64
		check    func(t *testing.T, ds []policyresult.Decision)
	}{
		{
			name: "a 2 MiB line over max_line_bytes (1 MiB), then a good line",
			data: []byte(line("before") + `{"eventType":"violation_admission","resourceName":"` + strings.Repeat("x", 2*mib) + "\"}\n" + line("next")),
			// The long line is consumed in the reader's 64 KiB pieces, never held whole.
			reasons: map[string]int64{"line_too_long": 1}, names: []string{"before", "next"},
			maxAlloc: 16 * mib,
		},
		{
			name:    "a line exactly max_line_bytes long is read",
			data:    []byte(line("a") + gatekeeperLine("exact") + strings.Repeat(" ", lineLimit-len(gatekeeperLine("exact"))) + "\n" + line("b")),
			reasons: map[string]int64{}, names: []string{"a", "exact", "b"},
		},
		{
			name:    "the last line has no newline at EOF",
			data:    []byte(line("a") + gatekeeperLine("no-newline")),
			reasons: map[string]int64{}, names: []string{"a", "no-newline"},
		},
		{
			name:    "a half line at EOF",
			data:    []byte(line("a") + gatekeeperLine("half")[:60]),
			reasons: map[string]int64{"event": 1}, names: []string{"a"},
		},
		{
			name:    "binary garbage",
			data:    []byte(line("a") + "\x00\x01\x02\xff\xfe\x1f\x8b\x08\x00\x00garbage\x7f\n" + "\x00\x00\x00\x00\n" + line("b")),
			reasons: map[string]int64{"event": 2}, names: []string{"a", "b"},
		},
		{
			name:    "invalid UTF-8 inside strings",
			data:    []byte(strings.Replace(line("bad\xff\xfeutf8"), "you must provide labels", "label\xc3 missing", 1)),
			reasons: map[string]int64{}, names: []string{"bad\uFFFD\uFFFDutf8"},
			check: func(t *testing.T, ds []policyresult.Decision) {
				// Repaired: each invalid byte becomes U+FFFD.
				require.Len(t, ds[0].Messages, 1)
				assert.Equal(t, "label\uFFFD missing", ds[0].Messages[0])
			},
		},
		{
			name:    "100,000 nested arrays",
			data:    []byte(line("a") + string(deepNesting(100_000)) + "\n" + line("b")),
			reasons: map[string]int64{"event": 1}, names: []string{"a", "b"},
			maxAlloc: 16 * mib,
		},
		{
			name:    "100,000 nested objects in an event",
			data:    []byte(line("a") + `{"eventType":"violation_admission","details":` + strings.Repeat(`{"a":`, 100_000) + "\n" + line("b")),
			reasons: map[string]int64{"event": 1}, names: []string{"a", "b"},
			maxAlloc: 16 * mib,
		},
		{
			name:    "10,000 empty and blank lines",
			data:    []byte(line("a") + strings.Repeat("\n", 5000) + strings.Repeat(" \t\r\n", 5000) + line("b")),
			reasons: map[string]int64{}, names: []string{"a", "b"},
		},
		{
			name:    "wrong types and non-decisions",
			data:    []byte(line("a") + "42\n\"str\"\nnull\n[1,2]\n" + `{"eventType":"violation_admission","resourceName":42}` + "\n" + `{"unrelated":true}` + "\n" + line("b")),
			reasons: map[string]int64{"event": 5, "not_decision": 1}, names: []string{"a", "b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dr := startDecisionLogs(t)
			before := allocated()
			dr.stream(tc.data)
			dr.waitRecords(len(tc.names))
			grew := allocated() - before
			t.Logf("%.1f MiB allocated", float64(grew)/mib)
			if tc.maxAlloc > 0 {
				assert.Less(t, grew, tc.maxAlloc, "bytes allocated while the stream was read")
			}
			ds := dr.decisions()
			var names []string
			for _, d := range ds {
				names = append(names, d.Resource.Name)
			}
			assert.Equal(t, tc.names, names, "the good lines, in order")
			var total int64
			for _, n := range tc.reasons {
				total += n
			}
			// A bad last line is counted when the stream ends, possibly after the good lines were delivered.
			assert.Eventually(t, func() bool { return dr.rejectedAll() >= total }, 5*time.Second, 10*time.Millisecond)
			for reason, n := range tc.reasons {
				assert.Equal(t, n, dr.rejected("unix", reason), "rejected{unix,%s}", reason)
			}
			assert.Equal(t, total, dr.rejectedAll(), "nothing else counted")
			if tc.check != nil {
				tc.check(t, ds)
			}
			dr.stillWorks()
		})
	}
}
