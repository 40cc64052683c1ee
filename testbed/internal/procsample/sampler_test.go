// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package procsample

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// metricsServer stands in for a collector's Prometheus endpoint: it serves a counter of two series and a
// gauge, with values the test sets.
type metricsServer struct {
	mu      sync.Mutex
	counter float64 // 0: not exposed yet, as the SDK does before the first increment
	gauge   float64
	fail    bool
	scrapes int
	onServe func(m *metricsServer) // called under mu before each answer
}

func (m *metricsServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scrapes++
	if m.onServe != nil {
		m.onServe(m)
	}
	if m.fail {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "# TYPE otelcol_exporter_sent_log_records_total counter")
	if m.counter > 0 {
		// Split over two series, one filtered out by CounterLabels in some tests.
		fmt.Fprintf(w, "otelcol_exporter_sent_log_records_total{exporter=\"s3\"} %g\n", m.counter-1)
		fmt.Fprintf(w, "otelcol_exporter_sent_log_records_total{exporter=\"debug\"} %g\n", 1.0)
	}
	fmt.Fprintf(w, "otelcol_exporter_queue_size{exporter=\"s3\"} %g\n", m.gauge)
	fmt.Fprintf(w, "otelcol_exporter_queue_size{exporter=\"debug\"} %g\n", 1.0)
}

func (m *metricsServer) set(counter, gauge float64, fail bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counter, m.gauge, m.fail = counter, gauge, fail
}

// child starts a real process that stays until the test ends, standing in for a restarted collector.
func child(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// gonePid is the pid of a process that exited and was reaped: its /proc entry no longer exists.
func gonePid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestSamplerCountsAcrossRestarts(t *testing.T) {
	srv := &metricsServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var pid atomic.Int64
	pid.Store(int64(os.Getpid()))
	s := newSampler("run", "a run", func() int { return int(pid.Load()) }, ts.URL,
		Options{Counter: "otelcol_exporter_sent_log_records", Gauges: []string{"otelcol_exporter_queue_size"}})

	step := func(counter, gauge float64, fail bool) Sample {
		t.Helper()
		time.Sleep(5 * time.Millisecond) // the rates divide by the time between samples
		srv.set(counter, gauge, fail)
		n := len(s.series.Samples)
		s.sample()
		if len(s.series.Samples) != n+1 {
			t.Fatalf("no sample taken of pid %d", pid.Load())
		}
		return s.series.Samples[n]
	}

	first := step(0, 0, false) // the counter not exposed yet
	if first.Rate != 0 || first.Restart || first.NoMetrics || first.RSSMB <= 0 {
		t.Fatalf("first sample %+v", first)
	}
	if got := first.Gauges["otelcol_exporter_queue_size"]; got != 1 {
		t.Fatalf("gauge summed over series = %v, want 1", got)
	}
	if r := step(100, 9, false).Rate; r <= 0 {
		t.Fatalf("rate after 100 records = %v", r)
	}
	if g := s.series.Samples[1].Gauges["otelcol_exporter_queue_size"]; g != 10 {
		t.Fatalf("gauge = %v, want 10", g)
	}
	step(250, 0, false)
	if s.series.CounterTotal != 250 {
		t.Fatalf("total %v, want 250", s.series.CounterTotal)
	}

	// Killed: its /proc entry is gone, so no sample.
	pid.Store(int64(gonePid(t)))
	n := len(s.series.Samples)
	s.sample()
	if len(s.series.Samples) != n {
		t.Fatalf("a gone process was sampled: %+v", s.series.Samples[n:])
	}

	// Restarted: a new pid whose counter starts from zero, though 400 > 250 would look like an increase.
	pid.Store(int64(child(t)))
	restarted := step(400, 0, false)
	if !restarted.Restart || restarted.Rate <= 0 {
		t.Fatalf("sample after the restart %+v", restarted)
	}
	if s.series.CounterTotal != 650 || s.series.Restarts != 1 {
		t.Fatalf("total %v, restarts %d; want 650 and 1", s.series.CounterTotal, s.series.Restarts)
	}

	// The same pid's counter drops: a reset, counted from zero.
	step(30, 0, false)
	if s.series.CounterTotal != 680 {
		t.Fatalf("total after a counter reset %v, want 680", s.series.CounterTotal)
	}

	// The endpoint fails: memory is still sampled, the rate is 0 and the count carries over.
	down := step(0, 0, true)
	if !down.NoMetrics || down.Rate != 0 || down.RSSMB <= 0 || down.Gauges != nil {
		t.Fatalf("sample while the endpoint fails %+v", down)
	}
	back := step(50, 0, false)
	if back.NoMetrics || back.Rate <= 0 || s.series.CounterTotal != 700 {
		t.Fatalf("after the endpoint came back: %+v, total %v (want 700)", back, s.series.CounterTotal)
	}

	// The peak is the largest high-water mark of either process: at least any resident size seen.
	for _, smp := range s.series.Samples {
		if smp.RSSMB > s.series.PeakRSSMB {
			t.Fatalf("sample RSS %v above the peak %v", smp.RSSMB, s.series.PeakRSSMB)
		}
	}
	for i := 1; i < len(s.series.Samples); i++ {
		if s.series.Samples[i].T < s.series.Samples[i-1].T {
			t.Fatalf("time went backwards at sample %d", i)
		}
	}
}

func TestSamplerCounterLabels(t *testing.T) {
	srv := &metricsServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := newSampler("run", "", os.Getpid, ts.URL,
		Options{Counter: "otelcol_exporter_sent_log_records", CounterLabels: `exporter="s3"`})
	srv.set(101, 0, false)
	s.sample()
	if s.series.CounterTotal != 100 {
		t.Fatalf("total of the s3 series %v, want 100", s.series.CounterTotal)
	}
}

// The sampler on its own goroutine: regular samples, a rate that integrates to the counter, a peak that
// covers the test process, and a series that Write stores and ReadSeries reads back.
func TestSamplerRunsAndWrites(t *testing.T) {
	srv := &metricsServer{onServe: func(m *metricsServer) { m.counter += 10 }}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s := Start("crash-short", "crash, short", os.Getpid, ts.URL+"/metrics",
		Options{Interval: 20 * time.Millisecond, Counter: "otelcol_exporter_sent_log_records"})
	time.Sleep(150 * time.Millisecond)
	mark := Mark{Name: "kill 1", T: s.Elapsed()}
	if mark.T < 0.15 || mark.T > 5 {
		t.Fatalf("elapsed %v s after sleeping 150ms", mark.T)
	}
	time.Sleep(150 * time.Millisecond)
	series := s.Stop()
	series.Marks = []Mark{mark}
	again := s.Stop()
	if len(again.Samples) != len(series.Samples) {
		t.Fatalf("a second Stop changed the series")
	}
	if len(series.Samples) < 5 {
		t.Fatalf("%d samples in 300ms at 20ms", len(series.Samples))
	}
	srv.mu.Lock()
	served := srv.counter
	srv.mu.Unlock()
	if series.CounterTotal != served {
		t.Fatalf("counted %v, the endpoint served up to %v", series.CounterTotal, served)
	}
	// A rate covers the time since the last sample whose scrape succeeded (a loaded machine can time one out).
	var integral, prev float64
	for _, smp := range series.Samples {
		if smp.NoMetrics {
			continue
		}
		integral += smp.Rate * (smp.T - prev)
		prev = smp.T
	}
	if integral < 0.95*served || integral > 1.05*served {
		t.Fatalf("rates integrate to %v, the counter rose by %v; samples %+v", integral, served, series.Samples)
	}
	self, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if series.PeakRSSMB <= 0 || series.PeakRSSMB > self.HWM+0.001 {
		t.Fatalf("peak %v MB, the process's own high-water mark %v MB", series.PeakRSSMB, self.HWM)
	}

	if err := series.Write(""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := series.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSeries(filepath.Join(dir, "series", "crash-short.json"))
	if err != nil {
		t.Fatal(err)
	}
	if back.Title != "crash, short" || len(back.Samples) != len(series.Samples) || back.PeakRSSMB != series.PeakRSSMB ||
		back.Counter != "otelcol_exporter_sent_log_records" || len(back.Marks) != 1 || back.Marks[0] != mark {
		t.Fatalf("read back %+v", back)
	}
}

func TestResultsDir(t *testing.T) {
	t.Setenv(ResultsDirEnv, "/tmp/x")
	if ResultsDir() != "/tmp/x" {
		t.Fatal(ResultsDir())
	}
}
