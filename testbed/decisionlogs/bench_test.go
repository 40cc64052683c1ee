// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package decisionlogs benchmarks the decision_logs receiver in the distribution binary: decisions per second
// over an NDJSON Unix socket and as OPA gzip uploads over HTTP, and, in the same run and collector, the core
// otlp receiver taking the same decisions as OTLP/HTTP JSON, and the collector's peak RSS. Run with
// `make bench-decisionlogs`; with $TESTBED_RESULTS_DIR set, each run also writes the collector's memory and
// accepted records per second over time (testbed/internal/procsample).
package decisionlogs

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

const (
	decisions = 300_000
	perBatch  = 500 // events per OPA upload and per OTLP request
	clients   = 8
)

func gatekeeperLine(i int) string {
	return fmt.Sprintf(`{"id":"2026-11-22T08:00:00Z","details":{"missing_labels":["owner"]},"eventType":"violation_admission",`+
		`"group":"constraints.gatekeeper.sh","version":"v1beta1","kind":"K8sRequiredLabels","name":"must-have-owner",`+
		`"message":"you must provide labels: {\"owner\"}","enforcementAction":"deny","resourceGroup":"","resourceAPIVersion":"v1",`+
		`"resourceKind":"Namespace","resourceNamespace":"","resourceName":"ns-%d","resourceLabels":{"team":"shop"},`+
		`"operation":"CREATE","requestUsername":"system:serviceaccount:ci:deployer"}`, i)
}

func opaEvent(i int) string {
	return fmt.Sprintf(`{"decision_id":"00000000-0000-4000-8000-%012d","path":"kubernetes/admission","result":{"allowed":false},`+
		`"input":{"kind":"AdmissionReview","request":{"uid":"u-%d","operation":"CREATE","kind":{"group":"","version":"v1","kind":"Namespace"},`+
		`"name":"ns-%d","userInfo":{"username":"system:serviceaccount:ci:deployer"}}},`+
		`"timestamp":"2026-11-22T08:00:00.000000001Z","labels":{"id":"opa-1","version":"1.22.2"},"requested_by":"10.0.0.1:4242"}`, i, i, i)
}

// otlpRequest is what the otlp receiver gets for the same decisions: the records decision_logs would emit.
func otlpRequest(start, n int) []byte {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	no := false
	for i := start; i < start+n; i++ {
		d := policyresult.Decision{ID: fmt.Sprintf("d-%d", i), Kind: policyresult.DecisionKindAdmission, Source: "gatekeeper",
			Policy: "K8sRequiredLabels", Rule: "must-have-owner", Allowed: &no, Action: policyresult.ActionDeny,
			Messages: []string{`you must provide labels: {"owner"}`}, Operation: "CREATE", User: "system:serviceaccount:ci:deployer",
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Namespace", Name: fmt.Sprintf("ns-%d", i)}}
		lr := lrs.AppendEmpty()
		policyresult.WriteDecisionLogRecord(&d, lr)
		lr.Body().SetEmptyMap().PutStr("eventType", "violation_admission")
		lr.Body().Map().PutStr("message", `you must provide labels: {"owner"}`)
	}
	b, _ := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	return b
}

// benchRuns numbers the calls of BenchmarkDecisionLogs (one per -count), for the names of their time series.
var benchRuns int

func BenchmarkDecisionLogs(b *testing.B) {
	benchRuns++
	dir, err := os.MkdirTemp("", "dlb")
	require.NoError(b, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "d.sock")
	opaPort, otlpPort, metricsPort := collectortest.FreePort(b), collectortest.FreePort(b), collectortest.FreePort(b)
	cfg := fmt.Sprintf(`
receivers:
  decision_logs:
    ndjson:
      - {transport: unix, endpoint: %s, format: gatekeeper}
    opa:
      endpoint: 127.0.0.1:%d
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  debug:
    verbosity: basic
service:
  pipelines:
    logs:
      receivers: [decision_logs, otlp]
      exporters: [debug]
  telemetry:
    logs: {level: warn}
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}
`, sock, opaPort, otlpPort, metricsPort)
	c, sampler := startSampled(b, dir, cfg, sock, metricsPort, fmt.Sprintf("decisionlogs-run%d", benchRuns),
		fmt.Sprintf("decision_logs: NDJSON, then OPA uploads, then otlp, 300,000 decisions each (run %d)", benchRuns))
	defer c.Stop()

	// Pre-build every payload, so that the clients spend as little CPU as possible during the measurement.
	lines := make([][]byte, clients)
	for k := range clients {
		var buf bytes.Buffer
		for i := k; i < decisions; i += clients {
			buf.WriteString(gatekeeperLine(i))
			buf.WriteByte('\n')
		}
		lines[k] = buf.Bytes()
	}
	var uploads, otlp [][]byte
	for start := 0; start < decisions; start += perBatch {
		var ev []string
		for i := start; i < start+perBatch; i++ {
			ev = append(ev, opaEvent(i))
		}
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write([]byte("[" + strings.Join(ev, ",") + "]"))
		_ = w.Close()
		uploads = append(uploads, gz.Bytes())
		otlp = append(otlp, otlpRequest(start, perBatch))
	}

	var marks []procsample.Mark
	for b.Loop() {
		marks = append(marks, procsample.Mark{Name: "NDJSON", T: sampler.Elapsed()})
		ndjson := measure(b, metricsPort, `receiver="decision_logs",transport="unix"`, decisions, func() {
			parallel(clients, func(k int) {
				conn, err := net.Dial("unix", sock)
				require.NoError(b, err)
				_, err = conn.Write(lines[k])
				require.NoError(b, err)
				require.NoError(b, conn.Close())
			})
		})
		marks = append(marks, procsample.Mark{Name: "OPA uploads", T: sampler.Elapsed()})
		opa := measure(b, metricsPort, `receiver="decision_logs",transport="http"`, decisions, func() {
			postAll(b, fmt.Sprintf("http://127.0.0.1:%d/logs", opaPort), uploads, map[string]string{"Content-Encoding": "gzip"})
		})
		marks = append(marks, procsample.Mark{Name: "otlp", T: sampler.Elapsed()})
		otlpRate := measure(b, metricsPort, `receiver="otlp",transport="http"`, decisions, func() {
			postAll(b, fmt.Sprintf("http://127.0.0.1:%d/v1/logs", otlpPort), otlp, nil)
		})
		b.Logf("decisions/s: NDJSON over a Unix socket %.0f, OPA gzip uploads %.0f, OTLP/HTTP JSON %.0f; ratios %.2f and %.2f",
			ndjson, opa, otlpRate, ndjson/otlpRate, opa/otlpRate)
		b.ReportMetric(ndjson, "ndjson-decisions/s")
		b.ReportMetric(opa, "opa-decisions/s")
		b.ReportMetric(otlpRate, "otlp-records/s")
	}
	series := sampler.Stop()
	series.Marks = marks
	require.NoError(b, series.Write(procsample.ResultsDir()))
	// The collector's peak resident memory over the run (VmHWM), payloads of 500 records at a time in flight.
	b.ReportMetric(series.PeakRSSMB, "peak-rss-MB")
}

// measure runs send and returns the receiver's accepted records per second, from the first byte sent until
// the collector's self-metric counted all n of them.
func measure(b *testing.B, metricsPort int, labels string, n int, send func()) float64 {
	before := accepted(metricsPort, labels)
	start := time.Now()
	send()
	collectortest.Eventually(b, 120*time.Second, func() error {
		if got := accepted(metricsPort, labels) - before; got < float64(n) {
			return fmt.Errorf("%.0f of %d accepted", got, n)
		}
		return nil
	})
	return float64(n) / time.Since(start).Seconds()
}

func accepted(port int, labels string) float64 {
	return counter(port, "otelcol_receiver_accepted_log_records", labels)
}

// counter is the sum of a self-metric's series that carry labels, 0 while the collector does not answer.
func counter(port int, name, labels string) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name) && containsLabels(line, labels) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

func containsLabels(line, labels string) bool {
	for _, l := range strings.Split(labels, ",") {
		if !strings.Contains(line, l) {
			return false
		}
	}
	return true
}

func postAll(b *testing.B, url string, bodies [][]byte, headers map[string]string) {
	next := make(chan []byte)
	go func() {
		for _, body := range bodies {
			next <- body
		}
		close(next)
	}()
	parallel(clients, func(int) {
		for body := range next {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			require.NoError(b, err)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(b, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(b, http.StatusOK, resp.StatusCode)
		}
	})
}

func parallel(n int, f func(int)) {
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(k)
		}()
	}
	wg.Wait()
}

// startSampled starts the collector on config cfg in dir, samples it with every receiver's accepted records as the
// series (which shows the paths of a run one after the other), and waits for its Unix socket sock.
func startSampled(b *testing.B, dir, cfg, sock string, metricsPort int, name, about string) (*collectortest.Collector, *procsample.Sampler) {
	cfgPath := filepath.Join(dir, "config.yaml")
	require.NoError(b, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	c := collectortest.Start(b, dir, cfgPath)
	sampler := procsample.Start(name, about, c.Pid, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), procsample.Options{
		Interval: 250 * time.Millisecond,
		Counter:  "otelcol_receiver_accepted_log_records",
	})
	collectortest.Eventually(b, 30*time.Second, func() error { _, err := os.Stat(sock); return err })
	return c, sampler
}
