// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogs

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

const (
	// exportRuns audit runs of runViolations each are the backlog the throughput is measured on: five is
	// Gatekeeper's largest maxAuditResults, the most complete runs its disk export ever keeps.
	exportRuns    = 5
	runViolations = 50_000
	violations    = exportRuns * runViolations
	// latencyRuns audit runs of latencyViolations each are renamed one at a time, the next once the last
	// record of the one before left the collector.
	latencyRuns       = 10
	latencyViolations = 10_000
	// exportPoll is gatekeeper_export's poll_interval: short, so that the latency is mostly the reading of a
	// run; listing one directory ten times a second costs nothing measurable. The shipped sidecar config polls
	// every 5s, which adds up to 5s to the latency. The throughput is timed from the first batch accepted, so
	// the wait for the poll is in neither.
	exportPoll = 100 * time.Millisecond
	// exportChannel is Gatekeeper's default --audit-channel.
	exportChannel = "audit-channel"
)

// runStart is the start of the first audit run; run k started k minutes later, Gatekeeper's default
// --audit-interval.
var runStart = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

func auditRunID(k int) string {
	return runStart.Add(time.Duration(k) * time.Minute).Format(time.RFC3339)
}

// violationLine is the violation_audited message of violation i of audit run id, as Gatekeeper's disk export
// writes it (one JSON line, ~700 B); the same line goes over the NDJSON socket.
func violationLine(id string, i int) string {
	return fmt.Sprintf(`{"id":%q,"details":{"missing_labels":["owner","cost-center"]},"eventType":"violation_audited",`+
		`"group":"constraints.gatekeeper.sh","version":"v1beta1","kind":"K8sRequiredLabels","name":"pod-must-have-owner",`+
		`"message":"you must provide labels: {\"cost-center\", \"owner\"}","enforcementAction":"deny",`+
		`"constraintAnnotations":{"policy.example.com/owner":"platform","policy.example.com/severity":"high"},`+
		`"resourceGroup":"","resourceAPIVersion":"v1","resourceKind":"Pod","resourceNamespace":"shop-%d",`+
		`"resourceName":"checkout-7d9f8c6b5-%06d","resourceLabels":{"app.kubernetes.io/name":"checkout",`+
		`"app.kubernetes.io/part-of":"shop","pod-template-hash":"7d9f8c6b5","team":"shop"}}`, id, i%50, i)
}

func auditMarker(id, msg string) string { return fmt.Sprintf(`{"id":%q,"message":%q}`, id, msg) }

// writeAuditRun writes audit run k as Gatekeeper's disk driver does, to <id>.txt under an exclusive flock,
// and returns the .txt; renaming it to .log completes the run.
func writeAuditRun(b *testing.B, dir string, k, n int) string {
	id := auditRunID(k)
	var buf bytes.Buffer
	buf.WriteString(auditMarker(id, "audit is started") + "\n")
	for i := range n {
		buf.WriteString(violationLine(id, i) + "\n")
	}
	buf.WriteString(auditMarker(id, "audit is completed") + "\n")
	txt := filepath.Join(dir, strings.ReplaceAll(id, ":", "_")+".txt")
	f, err := os.OpenFile(txt, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(b, err)
	require.NoError(b, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	_, err = f.Write(buf.Bytes())
	require.NoError(b, err)
	require.NoError(b, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	require.NoError(b, f.Close())
	return txt
}

func completeAuditRun(b *testing.B, txt string) {
	require.NoError(b, os.Rename(txt, strings.TrimSuffix(txt, ".txt")+".log"))
}

// pruneAuditRuns deletes all but the newest keep .log files, as Gatekeeper's retention (maxAuditResults) does.
func pruneAuditRuns(b *testing.B, dir string, keep int) {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(b, err)
	slices.Sort(logs)
	for len(logs) > keep {
		require.NoError(b, os.Remove(logs[0]))
		logs = logs[1:]
	}
}

// gatekeeperExportRuns numbers the calls of BenchmarkGatekeeperExport (one per -count), for its time series.
var gatekeeperExportRuns int

// BenchmarkGatekeeperExport: in one collector, the same 250,000 audit violations over the NDJSON Unix socket
// (the former socat recipe's path) and read by gatekeeper_export from five complete audit runs (state in
// file_storage, as the shipped sidecar config keeps it), each path's violations/s until the receiver accepted
// them all; then ten audit runs of 10,000 violations renamed to .log one at a time, the time from each rename
// until the debug exporter sent its last record.
func BenchmarkGatekeeperExport(b *testing.B) {
	gatekeeperExportRuns++
	dir, err := os.MkdirTemp("", "gkb")
	require.NoError(b, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "d.sock")
	exportDir := filepath.Join(dir, "export")
	channelDir := filepath.Join(exportDir, exportChannel)
	require.NoError(b, os.MkdirAll(channelDir, 0o755))
	metricsPort := collectortest.FreePort(b)
	cfg := fmt.Sprintf(`
extensions:
  file_storage:
    directory: %s
    create_directory: true
receivers:
  decision_logs:
    storage: file_storage
    ndjson:
      - {transport: unix, endpoint: %s, format: gatekeeper}
    gatekeeper_export:
      path: %s
      poll_interval: %s
exporters:
  debug:
    verbosity: basic
service:
  extensions: [file_storage]
  pipelines:
    logs:
      receivers: [decision_logs]
      exporters: [debug]
  telemetry:
    logs: {level: warn}
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}
`, filepath.Join(dir, "state"), sock, exportDir, exportPoll, metricsPort)
	c, sampler := startSampled(b, dir, cfg, sock, metricsPort, fmt.Sprintf("gatekeeperexport-run%d", gatekeeperExportRuns),
		fmt.Sprintf("decision_logs: 250,000 Gatekeeper audit violations over NDJSON, then from export files (run %d)", gatekeeperExportRuns))
	defer c.Stop()

	// The socket gets the violation lines of the runs the export path reads, in as many connections as the
	// other decision_logs benchmark; the runs are written before the measurement, as Gatekeeper would have.
	lines := make([][]byte, clients)
	for k := range clients {
		var buf bytes.Buffer
		for i := k; i < violations; i += clients {
			buf.WriteString(violationLine(auditRunID(i/runViolations), i%runViolations) + "\n")
		}
		lines[k] = buf.Bytes()
	}
	var marks []procsample.Mark
	run, loops := 0, 0
	for b.Loop() {
		loops++
		marks = append(marks, procsample.Mark{Name: "NDJSON", T: sampler.Elapsed()})
		ndjson := measure(b, metricsPort, `receiver="decision_logs",transport="unix"`, violations, func() {
			parallel(clients, func(k int) {
				conn, err := net.Dial("unix", sock)
				require.NoError(b, err)
				_, err = conn.Write(lines[k])
				require.NoError(b, err)
				require.NoError(b, conn.Close())
			})
		})
		drain(b, metricsPort)

		txts := make([]string, exportRuns)
		for k := range txts {
			txts[k] = writeAuditRun(b, channelDir, run, runViolations)
			run++
		}
		marks = append(marks, procsample.Mark{Name: "export files", T: sampler.Elapsed()})
		export := readRate(b, metricsPort, violations, func() {
			for _, txt := range txts {
				completeAuditRun(b, txt)
			}
		})
		drain(b, metricsPort)

		marks = append(marks, procsample.Mark{Name: "latency", T: sampler.Elapsed()})
		latencies := make([]float64, latencyRuns)
		for k := range latencies {
			txt := writeAuditRun(b, channelDir, run, latencyViolations)
			run++
			latencies[k] = leaving(b, metricsPort, latencyViolations, func() { completeAuditRun(b, txt) }).Seconds() * 1000
			pruneAuditRuns(b, channelDir, exportRuns)
		}
		slices.Sort(latencies)
		p50, maxLatency := latencies[len(latencies)/2], latencies[len(latencies)-1]

		b.Logf("violations/s: NDJSON over a Unix socket %.0f, export files %.0f (ratio %.2f); .log rename to last "+
			"record sent, %d runs of %d: p50 %.0f ms, max %.0f ms", ndjson, export, export/ndjson, latencyRuns,
			latencyViolations, p50, maxLatency)
		b.ReportMetric(ndjson, "ndjson-violations/s")
		b.ReportMetric(export, "export-violations/s")
		b.ReportMetric(p50, "rename-to-sent-p50-ms")
		b.ReportMetric(maxLatency, "rename-to-sent-max-ms")
	}
	// Every violation of every run read exactly once, none lost to a gap, the markers no records.
	require.Equal(b, float64(loops*(violations+latencyRuns*latencyViolations)),
		accepted(metricsPort, `receiver="decision_logs",transport="file"`))
	require.Zero(b, counter(metricsPort, "otelcol_receiver_decision_logs_export_gaps", ""))
	series := sampler.Stop()
	series.Marks = marks
	require.NoError(b, series.Write(procsample.ResultsDir()))
	b.ReportMetric(series.PeakRSSMB, "peak-rss-MB")
}

// readRate runs complete and returns the violations/s the receiver accepted from the export files, from the
// first batch accepted until all n were: the wait for the next poll (0 to exportPoll) before it is part of the
// latency, measured apart, not of the reading.
func readRate(b *testing.B, port, n int, complete func()) float64 {
	const labels = `receiver="decision_logs",transport="file"`
	before := accepted(port, labels)
	complete()
	deadline := time.Now().Add(30 * time.Second)
	var first float64
	for first = accepted(port, labels) - before; first == 0; first = accepted(port, labels) - before {
		if time.Now().After(deadline) {
			b.Fatal("after 30s, no violation read from the export files")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	collectortest.Eventually(b, 120*time.Second, func() error {
		if got := accepted(port, labels) - before; got < float64(n) {
			return fmt.Errorf("%.0f of %d accepted", got, n)
		}
		return nil
	})
	return (float64(n) - first) / time.Since(start).Seconds()
}

// sentByDebug is what left the collector: the records the debug exporter sent.
func sentByDebug(port int) float64 {
	return counter(port, "otelcol_exporter_sent_log_records", `exporter="debug"`)
}

// drain waits until the debug exporter sent every record the receiver accepted, so that one measurement's
// backlog does not run in the next.
func drain(b *testing.B, port int) {
	collectortest.Eventually(b, 60*time.Second, func() error {
		in, out := accepted(port, `receiver="decision_logs"`), sentByDebug(port)
		if out < in {
			return fmt.Errorf("%.0f of %.0f accepted records sent", out, in)
		}
		return nil
	})
}

// leaving runs complete and returns the time until the debug exporter sent n more records. The self-metrics
// are read every 10 ms, which bounds the error; scraping them costs the collector little at that rate.
func leaving(b *testing.B, port, n int, complete func()) time.Duration {
	before := sentByDebug(port)
	start := time.Now()
	complete()
	deadline := start.Add(60 * time.Second)
	for sentByDebug(port)-before < float64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("after 60s, %.0f of %d records sent", sentByDebug(port)-before, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}
