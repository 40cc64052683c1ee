// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"

import (
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
)

// sendStatus reports the exporter's component status from its Forward calls: a failed call is a recoverable
// error (the queue keeps what was not forwarded and retries it), the next call that succeeds is OK again. Status
// watchers (k8s_events) then see a collector whose results server is down or refuses it, which exporterhelper
// does not report. Calls run concurrently (sending_queue::num_consumers): the mutex keeps the last status
// reported that of the last call that changed it.
type sendStatus struct {
	host     component.Host
	endpoint string

	mu      sync.Mutex
	failing atomic.Bool
}

// failed reports a failed call. The error is gRPC's status (code and the server's message) with the endpoint,
// without the batch's counts, so that the same failure reads the same each time.
func (s *sendStatus) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing.Store(true)
	componentstatus.ReportStatus(s.host, componentstatus.NewRecoverableErrorEvent(fmt.Errorf("%s: %w", s.endpoint, err)))
}

// succeeded reports OK after a failure; the common case, no failure before, costs one atomic load.
func (s *sendStatus) succeeded() {
	if !s.failing.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing.Swap(false) {
		componentstatus.ReportStatus(s.host, componentstatus.NewEvent(componentstatus.StatusOK))
	}
}
