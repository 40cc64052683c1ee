// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension"

import (
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/pipeline"
	corev1 "k8s.io/api/core/v1"
)

// The reasons of the Events, for `kubectl get events --field-selector reason=…` and alerts on Events.
const (
	ReasonRecoverableError = "ComponentRecoverableError"
	ReasonPermanentError   = "ComponentPermanentError"
	ReasonFatalError       = "ComponentFatalError"
	ReasonRecovered        = "ComponentRecovered"
)

// maxMessageBytes is the API server's limit on an Event's note (events.k8s.io); a longer error is cut.
const maxMessageBytes = 1024

// kubeEvent is the Event recorded for a status change.
type kubeEvent struct {
	Type, Reason, Message string
}

// eventFor is the Event for a component whose status changes from prev to ev, if any: every error report (a
// repeated identical one bumps the count of the Event), and OK after an error. Starting, the first OK, Stopping
// and Stopped are the ordinary life of a collector and are not recorded.
func eventFor(source *componentstatus.InstanceID, prev componentstatus.Status, ev *componentstatus.Event) (kubeEvent, bool) {
	var reason string
	switch ev.Status() {
	case componentstatus.StatusRecoverableError:
		reason = ReasonRecoverableError
	case componentstatus.StatusPermanentError:
		reason = ReasonPermanentError
	case componentstatus.StatusFatalError:
		reason = ReasonFatalError
	case componentstatus.StatusOK:
		if !componentstatus.StatusIsError(prev) {
			return kubeEvent{}, false
		}
		return kubeEvent{Type: corev1.EventTypeNormal, Reason: ReasonRecovered, Message: describe(source) + " recovered"}, true
	default:
		return kubeEvent{}, false
	}
	// The error as the component reported it: components do not put credentials in their errors (they are in
	// configuration, not in what failed).
	text := "no error given"
	if err := ev.Err(); err != nil {
		text = err.Error()
	}
	return kubeEvent{Type: corev1.EventTypeWarning, Reason: reason, Message: truncate(describe(source) + ": " + text)}, true
}

// describe names a component as the collector's configuration does: "exporter results_grpc/fleet (pipeline
// logs)", "extension k8s_leader_elector".
func describe(source *componentstatus.InstanceID) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(source.Kind().String()))
	b.WriteByte(' ')
	b.WriteString(source.ComponentID().String())
	var pipelines []string
	source.AllPipelineIDs(func(id pipeline.ID) bool {
		pipelines = append(pipelines, id.String())
		return true
	})
	if len(pipelines) == 0 {
		return b.String()
	}
	slices.Sort(pipelines)
	if len(pipelines) == 1 {
		b.WriteString(" (pipeline ")
	} else {
		b.WriteString(" (pipelines ")
	}
	b.WriteString(strings.Join(pipelines, ", "))
	b.WriteByte(')')
	return b.String()
}

// truncate cuts s to maxMessageBytes, on a rune boundary, marking the cut.
func truncate(s string) string {
	if len(s) <= maxMessageBytes {
		return s
	}
	const mark = "…"
	cut := maxMessageBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
