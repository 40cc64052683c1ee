// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package procsample samples a running collector process at a fixed interval: its resident memory from /proc
// and the rate of one of its Prometheus counters (the throughput), plus any gauges asked for. The testbed's
// long runs record such a series so that the results show how memory and throughput moved during the run,
// not only where they ended up.
package procsample // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ResultsDirEnv names the directory the testbed suite collects results in; tests write nothing when it is unset.
const ResultsDirEnv = "TESTBED_RESULTS_DIR"

// ResultsDir returns $TESTBED_RESULTS_DIR ("" when the run is not part of the suite).
func ResultsDir() string { return os.Getenv(ResultsDirEnv) }

// WriteResult stores a run's figures as $TESTBED_RESULTS_DIR/<name>.json, where the suite collects them next to
// the series; it returns "" and writes nothing when the run is not part of the suite.
func WriteResult(name string, v any) (string, error) {
	dir := ResultsDir()
	if dir == "" {
		return "", nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".json")
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// Series is the time series of one run.
type Series struct {
	Name  string `json:"name"`  // file name stem, e.g. "crash-full"
	Title string `json:"title"` // what the run was, for the plot's panel title
	// Counter is the Prometheus counter whose rate is Sample.Rate ("" when none was sampled).
	Counter string `json:"counter,omitempty"`
	// IntervalS is the sampling interval.
	IntervalS float64  `json:"interval_s"`
	Samples   []Sample `json:"samples"`
	// PeakRSSMB is the largest VmHWM seen over every process the run sampled.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// CounterTotal is the counter's increase over the run, restarts included: the integral of the rates.
	CounterTotal float64 `json:"counter_total,omitempty"`
	// Restarts counts the times a new process replaced the one sampled before.
	Restarts int `json:"restarts,omitempty"`
	// Marks name moments of the run (a backend going down, coming back), on the samples' clock.
	Marks []Mark `json:"marks,omitempty"`
}

// Mark is a named moment, T seconds after the sampler started.
type Mark struct {
	Name string  `json:"name"`
	T    float64 `json:"t_s"`
}

// Sample is one observation, T seconds after the sampler started.
type Sample struct {
	T     float64 `json:"t_s"`
	RSSMB float64 `json:"rss_mb"`
	// Rate is the counter's increase per second since the previous sample whose scrape succeeded; 0 while the
	// metrics endpoint does not answer.
	Rate   float64            `json:"rate_per_s"`
	Gauges map[string]float64 `json:"gauges,omitempty"`
	// Restart marks the first sample of a process other than the previous sample's (a collector restart).
	Restart bool `json:"restart,omitempty"`
	// NoMetrics marks a sample whose scrape failed (the collector starting or stopping).
	NoMetrics bool `json:"no_metrics,omitempty"`
}

// Write stores the series as <dir>/series/<name>.json; nothing happens when dir is "".
func (s Series) Write(dir string) error {
	if dir == "" {
		return nil
	}
	if s.Name == "" {
		return fmt.Errorf("procsample: a series needs a name to be written")
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	d := filepath.Join(dir, "series")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, s.Name+".json"), append(b, '\n'), 0o644)
}

// ReadSeries reads a file Write wrote.
func ReadSeries(path string) (Series, error) {
	var s Series
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
