// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeepertest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/gatekeepertest"

import (
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RunLog keeps a copy of every complete run Gatekeeper writes, as it appears: Gatekeeper keeps only the newest
// MaxAuditResults runs, and a test compares what a reader sent with runs that may be pruned since. A run renamed
// over another of the same ID is kept as a run of its own.
type RunLog struct {
	g    *Gatekeeper
	mu   sync.Mutex
	runs []Run
	seen map[runFile]bool
	err  error
}

type runFile struct {
	id    string
	inode uint64
}

// recordEvery is how often a RunLog lists the runs: far below the life of a run, MaxAuditResults audit
// intervals of at least a second.
const recordEvery = 50 * time.Millisecond

// Record keeps every complete run written from now until the test ends.
func (g *Gatekeeper) Record(t testing.TB) *RunLog {
	t.Helper()
	l := &RunLog{g: g, seen: map[runFile]bool{}}
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
		if f := (runFile{r.ID, r.Inode}); !l.seen[f] {
			l.seen[f] = true
			l.runs = append(l.runs, r)
		}
	}
}

// Runs are the runs recorded so far, those on disk now included, oldest first: by ID, and runs of one ID in
// the order they appeared.
func (l *RunLog) Runs() []Run {
	l.poll()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]Run(nil), l.runs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Pause stops Gatekeeper's process (SIGSTOP): no run is completed or pruned until Resume, so that a test sees a
// fixed set of runs on disk. A run being written stays a .txt file meanwhile. Gatekeeper is resumed when the
// test ends.
func (g *Gatekeeper) Pause(t testing.TB) {
	t.Helper()
	g.signal(t, syscall.SIGSTOP)
}

// Resume continues a paused Gatekeeper. Its audit ticker fired while it was stopped, so it starts a run at once,
// named after the current second: Resume waits for the second after the newest run's, or that run would be
// replaced by one of the same name.
func (g *Gatekeeper) Resume(t testing.TB) {
	t.Helper()
	runs, err := g.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) > 0 {
		time.Sleep(time.Until(runs[len(runs)-1].Start().Add(time.Second)))
	}
	g.signal(t, syscall.SIGCONT)
}

func (g *Gatekeeper) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(g.proc.Pid(), sig); err != nil {
		t.Fatalf("signalling Gatekeeper (%v): %v", sig, err)
	}
}
