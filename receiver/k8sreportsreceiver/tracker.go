// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// update is the latest unprocessed version of one report.
type update struct {
	kind    string // the kind family, for metrics
	deleted bool
	// adopt records the results as emitted without emitting them (initial_sync: none).
	adopt bool
	// partial: results missing from this version are kept rather than resolved.
	partial bool
	// refused: this version fans out to more than the budget and was not read.
	refused *parse.Size
	uid     string
	rv      string
	results []parse.Result
}

// tracker sits between the watchers and the emitter. Watchers put the latest version of each report; the
// emitter takes them in arrival order, diffs them against what was emitted and commits after the pipeline
// accepted the records. Only the latest version of a report waits, so a burst of updates to one report costs
// one diff, and the number of waiting reports and of their results is bounded, which pushes back on the
// watchers when the pipeline is slower than the API server.
type tracker struct {
	mu                sync.Mutex
	wake              *sync.Cond
	pending           map[objKey]*update
	order             []objKey
	maxPending        int
	maxPendingResults int
	pendingResults    int
	closed            bool

	// emitted is what downstream has received, per report. Only the emitter writes it.
	emitted map[objKey]*emittedReport

	// idle is set while the emitter waits with nothing to take, having committed everything it took before;
	// onIdle, when set, is called then, with mu held.
	idle   bool
	onIdle func()
}

func newTracker(maxPending, maxPendingResults int, emitted map[objKey]*emittedReport) *tracker {
	if emitted == nil {
		emitted = map[objKey]*emittedReport{}
	}
	t := &tracker{pending: map[objKey]*update{}, emitted: emitted, maxPending: maxPending, maxPendingResults: maxPendingResults}
	t.wake = sync.NewCond(&t.mu)
	return t
}

// put records the latest version of a report, waiting while too many reports or results wait for the emitter.
func (t *tracker) put(ctx context.Context, k objKey, u *update) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for !t.closed && !t.roomLocked(k, u) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.wake.Wait()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	t.putLocked(k, u)
	return nil
}

// roomLocked says whether u may wait: within both bounds, or alone (one report may have as many results as
// the budget allows, which is the bound on results).
func (t *tracker) roomLocked(k objKey, u *update) bool {
	old, waiting := t.pending[k]
	others := len(t.pending)
	results := t.pendingResults + len(u.results)
	if waiting {
		others--
		results -= len(old.results)
	}
	return others == 0 || (others < t.maxPending && results <= t.maxPendingResults)
}

func (t *tracker) putLocked(k objKey, u *update) {
	if old, waiting := t.pending[k]; waiting {
		t.pendingResults -= len(old.results)
	} else {
		t.order = append(t.order, k)
	}
	t.pending[k] = u
	t.pendingResults += len(u.results)
	t.wake.Broadcast()
}

// refused returns what version rv of a report fanned out to, when it was skipped as too large: the watcher
// then skips it without reading it again.
func (t *tracker) refused(k objKey, rv string) (parse.Size, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.emitted[k]
	if rv == "" || e == nil || e.refused == nil || e.refused.resourceVersion != rv {
		return parse.Size{}, false
	}
	return e.refused.size, true
}

// remove records that a report is gone.
func (t *tracker) remove(k objKey, kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emitted[k] == nil && t.pending[k] == nil {
		return
	}
	t.putLocked(k, &update{kind: kind, deleted: true})
}

// listed is called after a complete list of gvr: every report of gvr that was emitted or is waiting but was not
// listed has been deleted (possibly while the receiver was down, or while its watch was broken).
func (t *tracker) listed(gvr schema.GroupVersionResource, kind string, seen map[objKey]struct{}) {
	t.removeUnless(kind, func(k objKey) bool {
		_, ok := seen[k]
		return k.gvr != gvr || ok
	})
}

// removeGVR is called when a report resource stops being served (its CRD was deleted): all its reports are gone.
func (t *tracker) removeGVR(gvr schema.GroupVersionResource, kind string) {
	t.removeUnless(kind, func(k objKey) bool { return k.gvr != gvr })
}

// removeUnless removes every emitted or waiting report for which keep is false.
func (t *tracker) removeUnless(kind string, keep func(objKey) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.emitted {
		if !keep(k) {
			t.putLocked(k, &update{kind: kind, deleted: true})
		}
	}
	for k, u := range t.pending {
		if !keep(k) && !u.deleted {
			t.putLocked(k, &update{kind: kind, deleted: true})
		}
	}
}

// emittedGVRs lists the resources that have emitted reports, to find those no longer served after a restart.
func (t *tracker) emittedGVRs() map[schema.GroupVersionResource]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[schema.GroupVersionResource]struct{}{}
	for k := range t.emitted {
		out[k.gvr] = struct{}{}
	}
	return out
}

// take returns the next waiting report, blocking until there is one when block is set. ok is false when
// nothing is waiting (and block is false) or the tracker is closed. While it waits, the emitter is idle when
// settled says that everything it took before was committed; nudge wakes it to ask again.
func (t *tracker) take(block bool, settled func() bool) (objKey, *update, *emittedReport, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.order) == 0 {
		if !block || t.closed {
			return objKey{}, nil, nil, false
		}
		if settled() {
			t.idle = true
			if t.onIdle != nil {
				t.onIdle()
			}
		}
		t.wake.Wait()
	}
	t.idle = false
	k := t.order[0]
	t.order[0] = objKey{}
	t.order = t.order[1:]
	u := t.pending[k]
	delete(t.pending, k)
	t.pendingResults -= len(u.results)
	t.wake.Broadcast()
	return k, u, t.emitted[k], true
}

// commit stores what downstream accepted. A nil report deletes the entry.
func (t *tracker) commit(k objKey, r *emittedReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r == nil {
		delete(t.emitted, k)
		return
	}
	t.emitted[k] = r
}

// nudge wakes a take that waits, after a commit: it may be idle now.
func (t *tracker) nudge() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wake.Broadcast()
}

// ifIdle calls f, with the tracker locked, if the emitter waits with nothing to take.
func (t *tracker) ifIdle(f func(reports int)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idle && len(t.order) == 0 {
		f(len(t.emitted))
	}
}

// size is the number of reports downstream knows about.
func (t *tracker) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.emitted)
}

// close wakes every waiter; take then returns false once nothing waits.
func (t *tracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.wake.Broadcast()
}
