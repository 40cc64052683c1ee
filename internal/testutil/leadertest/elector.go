// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package leadertest is a leader elector for unit tests, like contrib's k8sleaderelectortest: the test, not a
// Lease, decides when the components using it lead, and each call returns once their callbacks did, so that the
// test knows who leads without waiting. extension/k8sleaderelectorextension/k8sleaderelectortest pairs it, and
// the real extension, for handover tests.
package leadertest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/leadertest"

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-policy/otelcol-policy/internal/leadership"
)

// Elector is a k8s_leader_elector whose leadership the test switches with Lead and StopLeading.
type Elector struct {
	mu        sync.Mutex
	callbacks []callbacks
	leading   context.Context // non-nil while leading
	cancel    context.CancelFunc
}

type callbacks struct {
	start func(context.Context)
	stop  func()
}

var _ leadership.Elector = (*Elector)(nil)

// New returns an elector that does not lead.
func New() *Elector { return &Elector{} }

// SetCallBackFuncs registers callbacks as the real elector does: while leading, onStart runs at once.
func (e *Elector) SetCallBackFuncs(onStart func(context.Context), onStop func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.callbacks = append(e.callbacks, callbacks{start: onStart, stop: onStop})
	if e.leading != nil {
		go onStart(e.leading)
	}
}

// Lead makes this replica the leader and returns once every start callback returned, run in the order of
// registration as the real elector runs them.
func (e *Elector) Lead() {
	e.mu.Lock()
	if e.leading != nil {
		e.mu.Unlock()
		return
	}
	e.leading, e.cancel = context.WithCancel(context.Background())
	ctx, cbs := e.leading, append([]callbacks(nil), e.callbacks...)
	e.mu.Unlock()
	for _, cb := range cbs {
		cb.start(ctx)
	}
}

// StopLeading ends the leadership, as losing the lease does, and returns once every stop callback returned, run
// in the reverse order of registration: like the real elector, the next leader can only start after this one
// stopped its work.
func (e *Elector) StopLeading() {
	e.mu.Lock()
	if e.leading == nil {
		e.mu.Unlock()
		return
	}
	e.cancel()
	e.leading, e.cancel = nil, nil
	cbs := append([]callbacks(nil), e.callbacks...)
	e.mu.Unlock()
	for _, cb := range slices.Backward(cbs) {
		cb.stop()
	}
}

// Leading says whether this replica leads.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading != nil
}

// Start does nothing: leadership comes from the test.
func (e *Elector) Start(context.Context, component.Host) error { return nil }

// Shutdown gives up the leadership, as the real elector releases its lease.
func (e *Elector) Shutdown(context.Context) error {
	e.StopLeading()
	return nil
}
