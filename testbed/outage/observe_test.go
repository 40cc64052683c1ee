// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package outage

import (
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

const (
	queueSize     = "otelcol_exporter_queue_size"
	queueCapacity = "otelcol_exporter_queue_capacity"
	sentRecords   = "otelcol_exporter_sent_log_records"
)

// sample is what the collector's metrics do not show: the queue's storage on disk and the client's view.
type sample struct {
	T         float64 `json:"t_s"`
	DiskMB    float64 `json:"disk_mb"` // blocks allocated to the file_storage directory's files
	Accepted  int     `json:"accepted"`
	Status503 int64   `json:"status_503"`
}

// observer samples a run until stopped: the collector (RSS, exported records/s, queue size and capacity) through
// procsample, and the disk and client alongside on the same clock.
type observer struct {
	collector *procsample.Sampler
	done      chan struct{}
	wg        sync.WaitGroup

	mu      sync.Mutex
	samples []sample
	marks   []procsample.Mark
	stopped bool
	result  timeline
}

func observe(name, title string, pid int, client *loadclient.Client, metricsURL, storageDir string, every time.Duration) *observer {
	o := &observer{done: make(chan struct{})}
	o.collector = procsample.Start(name, title, func() int { return pid }, metricsURL, procsample.Options{
		Interval: every, Counter: sentRecords, Gauges: []string{queueSize, queueCapacity},
	})
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s := sample{T: o.since(), Accepted: client.AcceptedCount(), Status503: client.Stats().Status503,
				DiskMB: diskMB(storageDir)}
			o.mu.Lock()
			o.samples = append(o.samples, s)
			o.mu.Unlock()
			select {
			case <-o.done:
				return
			case <-tick.C:
			}
		}
	}()
	return o
}

func (o *observer) since() float64 { return round(o.collector.Elapsed()) }

func (o *observer) mark(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.marks = append(o.marks, procsample.Mark{Name: name, T: o.since()})
}

// timeline is what an observer saw.
type timeline struct {
	Start     time.Time // of the clock the samples and marks count from
	Collector procsample.Series
	Samples   []sample
}

// stop ends the sampling and returns the timeline; later calls return the same.
func (o *observer) stop() timeline {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return o.result
	}
	o.stopped = true
	close(o.done)
	start := time.Now().Add(-time.Duration(o.collector.Elapsed() * float64(time.Second)))
	series := o.collector.Stop()
	o.mu.Unlock()
	o.wg.Wait()
	o.mu.Lock()
	series.Marks = o.marks
	o.result = timeline{Start: start, Collector: series, Samples: o.samples}
	return o.result
}

func (tl timeline) at(name string) float64 {
	for _, m := range tl.Collector.Marks {
		if m.Name == name {
			return m.T
		}
	}
	return -1
}

// diskMB is the space allocated to the files under dir.
func diskMB(dir string) float64 {
	var blocks int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		if info, err := e.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				blocks += st.Blocks
			}
		}
		return nil
	})
	return float64(blocks*512) / (1 << 20)
}

func round(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
