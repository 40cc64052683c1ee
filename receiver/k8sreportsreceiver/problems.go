// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

// problems turns the receiver's faults into what operators see: a log line naming the resource or object, a
// self-metric by reason, and the component status. The status is a recoverable error while any fault lasts,
// with every current fault in its message, and OK again once all cleared; no fault stops the other kinds.
type problems struct {
	host      component.Host
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder

	mu       sync.Mutex
	active   map[string]error
	reported string
	started  bool
}

func newProblems(logger *zap.Logger, tb *metadata.TelemetryBuilder) *problems {
	return &problems{logger: logger, telemetry: tb, active: map[string]error{}}
}

// start begins reporting statuses to host; faults before it are only logged and counted.
func (p *problems) start(host component.Host) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.host, p.started = host, true
	p.reportLocked()
}

func reasonOf(op string, err error) string {
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "forbidden"
	case errors.As(err, &netErr) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err):
		return "unavailable"
	}
	return op
}

// fail records a fault of one watched resource.
func (p *problems) fail(w *watcher, op string, err error) {
	p.set(w.gvr.String(), w.kind.name, reasonOf(op, err), fmt.Errorf("%s %s: %w", op, w.gvr.Resource+"."+w.gvr.Group, err))
}

func (p *problems) clear(w *watcher) { p.clearSource(w.gvr.String()) }

// malformed records an object that cannot be read; it is skipped, so it does not change the status.
func (p *problems) malformed(w *watcher, ref string, err error) {
	p.count(w.kind.name, "malformed")
	p.logger.Warn("Skipping a report that cannot be read", zap.String("object", ref), zap.Error(err))
}

// tooLarge records a report skipped because it fans out to more than the budget. It is counted and logged
// each time the report is met; the status lists such reports while they last (refusals).
func (p *problems) tooLarge(w *watcher, ref string, err error) {
	p.count(w.kind.name, "too_large")
	p.logger.Warn("Skipping a report too large to process", zap.String("object", ref), zap.String("kind", w.kind.name), zap.Error(err))
}

// set records a fault from source (a resource, "discovery", "consume", "storage").
func (p *problems) set(source, kind, reason string, err error) {
	p.count(kind, reason)
	if p.hold(source, err) {
		p.logger.Warn("Kubernetes reports receiver fault; retrying", zap.String("source", source), zap.String("reason", reason), zap.Error(err))
	}
}

// hold keeps err in the status until source is cleared; true when it is new or changed.
func (p *problems) hold(source string, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, had := p.active[source]
	p.active[source] = err
	p.reportLocked()
	return !had || prev.Error() != err.Error()
}

func (p *problems) clearSource(source string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, had := p.active[source]; !had {
		return
	}
	delete(p.active, source)
	p.logger.Info("Kubernetes reports receiver fault cleared", zap.String("source", source))
	p.reportLocked()
}

func (p *problems) count(kind, reason string) {
	p.telemetry.ReceiverK8sReportsErrors.Add(context.Background(), 1,
		metric.WithAttributes(attribute.String("kind", kind), attribute.String("reason", reason)))
}

func (p *problems) reportLocked() {
	if !p.started {
		return
	}
	msgs := make([]string, 0, len(p.active))
	for _, err := range p.active {
		msgs = append(msgs, err.Error())
	}
	slices.Sort(msgs)
	msg := strings.Join(msgs, "; ")
	if msg == p.reported {
		return
	}
	p.reported = msg
	if msg == "" {
		componentstatus.ReportStatus(p.host, componentstatus.NewEvent(componentstatus.StatusOK))
		return
	}
	componentstatus.ReportStatus(p.host, componentstatus.NewRecoverableErrorEvent(errors.New(msg)))
}
