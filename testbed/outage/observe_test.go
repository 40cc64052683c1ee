package outage

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"
)

// sample is the state of one run at one moment.
type sample struct {
	T          float64 `json:"t_s"`
	QueueBytes float64 `json:"queue_bytes"`
	Capacity   float64 `json:"queue_capacity_bytes"`
	DiskMB     float64 `json:"disk_mb"` // blocks allocated to the file_storage directory's files
	Accepted   int     `json:"accepted"`
	Status503  int64   `json:"status_503"`
	RSSMB      float64 `json:"rss_mb"`
}

// mark names a moment of the run (down, up, stream end, all arrived, drained).
type mark struct {
	Name string  `json:"name"`
	T    float64 `json:"t_s"`
}

// observer samples the collector, its queue and the client until stopped.
type observer struct {
	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	samples []sample
	marks   []mark
	peakRSS float64 // VmHWM, MB
	stopped bool
}

func observe(pid int, client *loadclient.Client, metricsURL, exporter, storageDir string, every time.Duration) *observer {
	o := &observer{start: time.Now(), done: make(chan struct{})}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s := sample{T: o.since(), Accepted: client.AcceptedCount(), Status503: client.Stats().Status503,
				DiskMB: diskMB(storageDir)}
			// A scrape that fails leaves the gauges at zero for that sample; the checks read only successful
			// ones through the peak, which a missed scrape can only lower.
			s.QueueBytes, _ = arrivals.ExporterGauge(metricsURL, "otelcol_exporter_queue_size", exporter)
			s.Capacity, _ = arrivals.ExporterGauge(metricsURL, "otelcol_exporter_queue_capacity", exporter)
			rss, hwm := memoryMB(pid)
			s.RSSMB = rss
			o.mu.Lock()
			o.samples = append(o.samples, s)
			o.peakRSS = max(o.peakRSS, hwm)
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

func (o *observer) since() float64 { return round(time.Since(o.start).Seconds()) }

func (o *observer) mark(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.marks = append(o.marks, mark{Name: name, T: o.since()})
}

// timeline is what an observer saw.
type timeline struct {
	Start     time.Time // of the clock the samples and marks count from
	Samples   []sample
	Marks     []mark
	PeakRSSMB float64
}

// stop ends the sampling and returns the timeline; later calls return the same.
func (o *observer) stop() timeline {
	o.mu.Lock()
	if !o.stopped {
		o.stopped = true
		close(o.done)
	}
	o.mu.Unlock()
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return timeline{Start: o.start, Samples: o.samples, Marks: o.marks, PeakRSSMB: o.peakRSS}
}

func (tl timeline) at(name string) float64 {
	for _, m := range tl.Marks {
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

// memoryMB reads the resident and peak resident memory of pid (VmRSS, VmHWM).
func memoryMB(pid int) (rss, hwm float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

func round(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
