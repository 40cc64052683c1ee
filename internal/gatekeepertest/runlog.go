// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeepertest // import "github.com/otelcol-policy/otelcol-policy/internal/gatekeepertest"

import (
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RunLog keeps a copy of every complete run Gatekeeper writes, as it appears: Gatekeeper keeps only the newest
// MaxAuditResults runs, and a test compares what a reader sent with runs that may be pruned since.
type RunLog struct {
	g    *Gatekeeper
	mu   sync.Mutex
	runs map[string]Run
	err  error
}

// recordEvery is how often a RunLog lists the runs: far below the life of a run, MaxAuditResults audit
// intervals of at least a second.
const recordEvery = 50 * time.Millisecond

// Record keeps every complete run written from now until the test ends.
func (g *Gatekeeper) Record(t testing.TB) *RunLog {
	t.Helper()
	l := &RunLog{g: g, runs: map[string]Run{}}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(recordEvery)
		defer tick.Stop()
		for {
			l.poll()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-stopped
		if l.err != nil {
			t.Errorf("recording Gatekeeper's runs: %v", l.err)
		}
	})
	return l
}

func (l *RunLog) poll() {
	runs, err := l.g.Runs()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.err = err
		return
	}
	for _, r := range runs {
		l.runs[r.ID] = r
	}
}

// Runs are the runs recorded so far, those on disk now included, oldest first.
func (l *RunLog) Runs() []Run {
	l.poll()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Run, 0, len(l.runs))
	for _, r := range l.runs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Pause stops Gatekeeper's process (SIGSTOP): no run is completed or pruned until Resume, so that a test sees a
// fixed set of runs on disk. A run being written stays a .txt file meanwhile. Gatekeeper is resumed when the
// test ends.
func (g *Gatekeeper) Pause(t testing.TB) {
	t.Helper()
	g.signal(t, syscall.SIGSTOP)
}

// Resume continues a paused Gatekeeper.
func (g *Gatekeeper) Resume(t testing.TB) {
	t.Helper()
	g.signal(t, syscall.SIGCONT)
}

func (g *Gatekeeper) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(g.proc.Pid(), sig); err != nil {
		t.Fatalf("signalling Gatekeeper (%v): %v", sig, err)
	}
}
