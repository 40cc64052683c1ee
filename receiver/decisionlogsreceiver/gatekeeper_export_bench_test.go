// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver

// go test -run '^$' -bench GatekeeperViolations -count 5: Gatekeeper's audit violations (testdata/decoders/
// gatekeeper_audit.json, 600 B) read from complete .log files of the disk export, and the same lines written to
// an NDJSON Unix socket (the former socat recipe), each into a pipeline that takes them; results in README.md
// ("Performance").

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
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
