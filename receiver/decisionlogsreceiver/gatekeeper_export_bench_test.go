// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver

// go test -run '^$' -bench GatekeeperViolations -count 5: Gatekeeper's audit violations
// (internal/decode/testdata/decoders/gatekeeper_audit.json, 600 B) read from complete .log files of the disk
// export, and the same lines written to an NDJSON Unix socket (the former socat recipe), each into a pipeline
// that takes them; results in README.md ("Performance").

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// benchViolations are the violations of one audit run, or one write to the socket.
const benchViolations = 10000

// countingConsumer says when it has taken target records.
type countingConsumer struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func newCountingConsumer(b *testing.B) (*countingConsumer, consumer.Logs) {
	c := &countingConsumer{target: benchViolations, done: make(chan struct{}, 1)}
	next, err := consumer.NewLogs(func(_ context.Context, ld plog.Logs) error {
		if c.n.Add(int64(ld.LogRecordCount())) == c.target {
			c.n.Store(0)
			c.done <- struct{}{}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return c, next
}

func benchAuditLines(b *testing.B) []string {
	var line bytes.Buffer
	if err := json.Compact(&line, fixture(b, "gatekeeper_audit.json")); err != nil {
		b.Fatal(err)
	}
	lines := make([]string, benchViolations)
	for i := range lines {
		lines[i] = line.String()
	}
	return lines
}

func reportViolationsPerSecond(b *testing.B, elapsed time.Duration) {
	b.ReportMetric(float64(benchViolations)*float64(b.N)/elapsed.Seconds(), "violations/s")
}

func BenchmarkGatekeeperViolationsFromExportFiles(b *testing.B) {
	lines := benchAuditLines(b)
	path := b.TempDir()
	dir := filepath.Join(path, channel)
	cfg := createDefaultConfig().(*Config)
	g := defaultGatekeeperExport()
	g.Path = path
	cfg.GatekeeperExport = configoptional.Some(g)
	c, next := newCountingConsumer(b)
	r, err := newReceiver(cfg, receivertest.NewNopSettings(NewFactory().Type()), next)
	if err != nil {
		b.Fatal(err)
	}
	tick, polled := make(chan time.Time), make(chan struct{})
	r.gkTick, r.gkPolled = tick, polled
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := r.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	<-polled
	b.SetBytes(int64(benchViolations * (len(lines[0]) + 1)))
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := auditID(t0.Add(time.Duration(i) * time.Second))
		run := writeAuditRun(b, dir, id, lines...)
		b.StartTimer()
		start := time.Now()
		tick <- start
		<-c.done
		<-polled
		elapsed += time.Since(start)
		b.StopTimer()
		if err := os.Remove(run); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportViolationsPerSecond(b, elapsed)
}

func BenchmarkGatekeeperViolationsFromNDJSONSocket(b *testing.B) {
	payload := []byte(strings.Join(benchAuditLines(b), "\n") + "\n")
	dir, err := os.MkdirTemp("", "dl")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := createDefaultConfig().(*Config)
	l := defaultNDJSON()
	l.Endpoint, l.Format = filepath.Join(dir, "decisions.sock"), FormatGatekeeper
	cfg.NDJSON = []NDJSONConfig{l}
	c, next := newCountingConsumer(b)
	r, err := newReceiver(cfg, receivertest.NewNopSettings(NewFactory().Type()), next)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := r.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	conn, err := net.Dial("unix", l.Endpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	b.SetBytes(int64(len(payload)))
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := conn.Write(payload); err != nil {
			b.Fatal(err)
		}
		<-c.done
		elapsed += time.Since(start)
	}
	reportViolationsPerSecond(b, elapsed)
}

// stateViolations is the largest audit run the Gatekeeper sidecar's audit_changes state is sized for (README.md,
// "Audit changes").
const stateViolations = 100_000

// stateViolationLines are the violations of a large cluster's audit run: Gatekeeper's audit violation
// (internal/decode/testdata/decoders/gatekeeper_audit.json, 600 B) of one Pod after another, over 50 namespaces.
func stateViolationLines(b *testing.B) []string {
	line := benchAuditLines(b)[0]
	lines := make([]string, stateViolations)
	for i := range lines {
		lines[i] = strings.NewReplacer(`"resourceNamespace":"nginx"`, fmt.Sprintf(`"resourceNamespace":"shop-%d"`, i%50),
			`"resourceName":"nginx-deployment-cd55c47f5-2b84x"`, fmt.Sprintf(`"resourceName":"checkout-7d9f8c6b5-%06d"`, i)).Replace(line)
	}
	return lines
}

// go test -run '^$' -bench GatekeeperExportAuditChangesState -benchtime 5x: what audit_changes keeps of an audit
// run of 100,000 violations, in memory (the live heap of one run's violations; a run being compared holds two)
// and in storage, per violation; and the time and allocations of comparing a run with the one before.
func BenchmarkGatekeeperExportAuditChangesState(b *testing.B) {
	dir := b.TempDir()
	run := writeAuditRun(b, dir, runAt(0), stateViolationLines(b)...)
	cfg := defaultGatekeeperExport()
	g := &gkExport{cfg: &cfg}
	scan := func(prev *gkViolations) *gkViolations {
		f, err := os.Open(run)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		a, err := g.scanRun(f, prev, filepath.Base(run))
		if err != nil {
			b.Fatal(err)
		}
		return a.next
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	prev := scan(nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if prev.len() != stateViolations {
		b.Fatalf("%d violations kept", prev.len())
	}
	heap := float64(after.HeapAlloc-before.HeapAlloc) / stateViolations
	stored := float64(len(prev.marshal())) / stateViolations
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		runtime.KeepAlive(scan(prev))
	}
	b.ReportMetric(heap, "heap-B/violation")
	b.ReportMetric(stored, "stored-B/violation")
}
