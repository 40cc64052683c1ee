// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package statustest has the component.Host of tests of components that report their status
// (componentstatus.ReportStatus): it holds the extensions a component looks up and records every status the
// component reports, for a test to read the latest or wait for the next.
package statustest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"

import (
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
)

// Host is a component.Host with extensions that records the statuses reported to it.
type Host struct {
	// Extensions are what GetExtensions returns; a test may add to them before it starts the component.
	Extensions map[component.ID]component.Component

	mu      sync.Mutex
	all     []*componentstatus.Event
	next    int           // of all, the first event Next has not returned
	changed chan struct{} // closed at the next report
}

// NewHost is a host with extensions ext (none when nil).
func NewHost(ext map[component.ID]component.Component) *Host {
	if ext == nil {
		ext = map[component.ID]component.Component{}
	}
	return &Host{Extensions: ext, changed: make(chan struct{})}
}

// GetExtensions implements component.Host.
func (h *Host) GetExtensions() map[component.ID]component.Component { return h.Extensions }

// Report implements componentstatus.Reporter.
func (h *Host) Report(ev *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all = append(h.all, ev)
	close(h.changed)
	h.changed = make(chan struct{})
}

// Last is the latest status reported, or nil when there was none.
func (h *Host) Last() *componentstatus.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.all) == 0 {
		return nil
	}
	return h.all[len(h.all)-1]
}

// Next waits for the status reported after the one Next returned before (the first one at the first call), and
// fails the test if none comes within a minute.
func (h *Host) Next(t testing.TB) *componentstatus.Event {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		h.mu.Lock()
		if h.next < len(h.all) {
			ev := h.all[h.next]
			h.next++
			h.mu.Unlock()
			return ev
		}
		changed := h.changed
		h.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no status reported within a minute after %d", h.next)
			return nil
		}
	}
}
