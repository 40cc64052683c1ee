// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package procsample

import (
	"net/http"
	"sync"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
)

// Options of a Sampler.
type Options struct {
	// Interval between samples; 1s when zero.
	Interval time.Duration
	// Counter is a Prometheus counter (e.g. otelcol_exporter_sent_log_records), summed over its series, whose
	// per-second rate is the sample's throughput. Empty: no rate.
	Counter string
	// CounterLabels keeps only the counter's series whose line contains each comma-separated substring, e.g.
	// `receiver="decision_logs",transport="unix"`.
	CounterLabels string
	// Gauges are other Prometheus metrics recorded per sample, each summed over its series (e.g.
	// otelcol_exporter_queue_size).
	Gauges []string
}

// Sampler samples one collector, whose process may be replaced while it runs (tests kill and restart it).
type Sampler struct {
	name, title string
	pid         func() int
	metricsURL  string
	opts        Options
	client      *http.Client
	began       time.Time

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// Owned by the sampling goroutine until done is closed, then by Stop.
	series    Series
	lastPid   int
	lastValue float64   // the counter as the current process last reported it
	lastAt    time.Time // when the counter was last read
}

// Start samples now and then every opts.Interval until Stop. pid returns the collector's current process id (0
// when none runs); it is called from the sampler's goroutine, so it must be safe for that. A process whose /proc
// entry is gone (killed, not yet restarted) is skipped for that sample. metricsURL is the collector's Prometheus
// endpoint (http://host:port/metrics); it is only read when opts asks for a counter or gauges.
//
// Each process's counter is counted from zero: a new pid, or a value lower than the last one (the counter
// reset), starts a new count that adds to the total. So start the sampler no later than the collector, or the
// first rate includes what the collector counted before.
func Start(name, title string, pid func() int, metricsURL string, opts Options) *Sampler {
	s := newSampler(name, title, pid, metricsURL, opts)
	go s.run()
	return s
}

// newSampler is Start without the goroutine, so that tests can drive sample() themselves.
func newSampler(name, title string, pid func() int, metricsURL string, opts Options) *Sampler {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	timeout := 2 * opts.Interval
	if timeout < time.Second {
		timeout = time.Second
	}
	now := time.Now()
	s := &Sampler{
		name: name, title: title, pid: pid, metricsURL: metricsURL, opts: opts,
		client: &http.Client{Timeout: timeout},
		began:  now, lastAt: now,
		stop: make(chan struct{}), done: make(chan struct{}),
		series: Series{Name: name, Title: title, Counter: opts.Counter, IntervalS: opts.Interval.Seconds()},
	}
	return s
}

func (s *Sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	s.sample()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.sample()
		}
	}
}

// Stop ends the sampling, takes a last sample (so that the peak covers the whole run) and returns the series.
// Calling it again returns the same series.
func (s *Sampler) Stop() Series {
	s.stopOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.sample()
	})
	return s.series
}

// Elapsed is the time since the sampler started, on the clock of its samples (for Series.Marks).
func (s *Sampler) Elapsed() float64 { return time.Since(s.began).Seconds() }

func (s *Sampler) sample() {
	pid := s.pid()
	if pid <= 0 {
		return
	}
	mem, err := ReadMemory(pid)
	if err != nil {
		return // the process is gone; its replacement will be sampled once it runs
	}
	now := time.Now()
	// T keeps its full precision: the rate of a sample taken moments after the previous one (the last, at Stop)
	// covers that short time, and rounding it would break the integral of the rates.
	smp := Sample{T: now.Sub(s.began).Seconds(), RSSMB: round3(mem.RSS)}
	if pid != s.lastPid {
		// A new process counts from zero.
		if s.lastPid != 0 {
			smp.Restart = true
			s.series.Restarts++
		}
		s.lastPid, s.lastValue = pid, 0
	}
	if mem.HWM > s.series.PeakRSSMB {
		s.series.PeakRSSMB = round3(mem.HWM)
	}
	if s.opts.Counter != "" || len(s.opts.Gauges) > 0 {
		s.readMetrics(now, &smp)
	}
	s.series.Samples = append(s.series.Samples, smp)
}

func (s *Sampler) readMetrics(now time.Time, smp *Sample) {
	text, err := selfmetrics.Scrape(s.client, s.metricsURL)
	if err != nil {
		smp.NoMetrics = true
		return
	}
	if s.opts.Counter != "" {
		// A counter not exposed yet has counted nothing: the SDK exposes a counter from its first increment.
		v, _ := selfmetrics.Sum(text, s.opts.Counter, s.opts.CounterLabels)
		delta := v - s.lastValue
		if v < s.lastValue {
			delta = v // the counter reset: the process restarted under the same pid, or re-registered it
		}
		if dt := now.Sub(s.lastAt).Seconds(); dt > 0 {
			smp.Rate = round3(delta / dt)
		}
		s.series.CounterTotal += delta
		s.lastValue, s.lastAt = v, now
	}
	for _, g := range s.opts.Gauges {
		if v, ok := selfmetrics.Sum(text, g, ""); ok {
			if smp.Gauges == nil {
				smp.Gauges = make(map[string]float64, len(s.opts.Gauges))
			}
			smp.Gauges[g] = v
		}
	}
}

// round3 keeps the JSON files readable; a thousandth of an MB or of a record per second is below what the
// samples resolve.
func round3(f float64) float64 {
	if f < 0 {
		return -round3(-f)
	}
	return float64(int64(f*1000+0.5)) / 1000
}
