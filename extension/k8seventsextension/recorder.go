// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension"

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// requestTimeout bounds each write of an Event.
const requestTimeout = 30 * time.Second

// flushAnnotation marks the Event Shutdown records last; the sink recognises it and does not write it.
const flushAnnotation = "otelcol-policy.io/k8s-events-flush"

type eventsExtension struct {
	cfg    *Config
	logger *zap.Logger
	// component is the Events' source: the collector's command (otelcol-policy), as kubectl's FROM column.
	component string
	pod       *corev1.ObjectReference

	mu sync.Mutex
	// last is each component's latest status, to tell a recovery from a first OK.
	last        map[*componentstatus.InstanceID]componentstatus.Status
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder // nil before Start and after Shutdown
	flushed     chan struct{}
}

var (
	_ extension.Extension                          = (*eventsExtension)(nil)
	_ extensioncapabilities.ComponentStatusWatcher = (*eventsExtension)(nil)
	_ record.EventSink                             = (*flushSink)(nil)
)

func newEventsExtension(cfg *Config, set extension.Settings) *eventsExtension {
	source := set.BuildInfo.Command
	if source == "" {
		source = "otelcol-policy"
	}
	return &eventsExtension{
		cfg:       cfg,
		logger:    set.Logger,
		component: source,
		pod: &corev1.ObjectReference{
			APIVersion: "v1", Kind: "Pod",
			Namespace: cfg.PodNamespace, Name: cfg.PodName, UID: types.UID(cfg.PodUID),
		},
		last: map[*componentstatus.InstanceID]componentstatus.Status{},
	}
}

// Start connects the recorder to the API server. Nothing is sent until a component reports an error.
func (e *eventsExtension) Start(context.Context, component.Host) error {
	rc, err := e.cfg.RestConfig("otelcol-policy/k8s_events")
	if err != nil {
		return err
	}
	// The recorder's calls carry no context: a request to an API server that stopped answering would hold back
	// every later Event.
	rc.Timeout = requestTimeout
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{QPS: e.cfg.QPS, BurstSize: e.cfg.Burst}))
	flushed := make(chan struct{})
	b.StartRecordingToSink(&flushSink{
		EventSink: &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(e.cfg.PodNamespace)},
		flushed:   flushed,
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.broadcaster, e.flushed = b, flushed
	e.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: e.component, Host: e.cfg.PodName})
	return nil
}

// Changed records the Event of a status change. The recorder only queues it (and drops it when
// 1000 are queued), so a component reporting its status never waits for the API server.
func (e *eventsExtension) Changed(source *componentstatus.InstanceID, ev *componentstatus.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.last[source]
	e.last[source] = ev.Status()
	k, ok := eventFor(source, prev, ev)
	if !ok {
		return
	}
	if e.recorder == nil {
		e.logger.Warn("Component status not recorded as a Kubernetes Event: the extension is not running",
			zap.String("reason", k.Reason), zap.String("message", k.Message))
		return
	}
	e.recorder.Event(e.pod, k.Type, k.Reason, k.Message)
}

// Shutdown writes the Events still queued, within ctx, then stops the recorder. The broadcaster writes Events
// one at a time in order: once the marker recorded last reaches the sink, every Event before it was written or
// given up on (an API server that refused it).
func (e *eventsExtension) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	b, rec, flushed := e.broadcaster, e.recorder, e.flushed
	e.recorder = nil
	e.mu.Unlock()
	if b == nil {
		return nil
	}
	marker := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: e.cfg.PodNamespace, Name: e.cfg.PodName + "-flush"}
	rec.AnnotatedEventf(marker, map[string]string{flushAnnotation: "true"}, corev1.EventTypeNormal, "Flush", "")
	select {
	case <-flushed:
	case <-ctx.Done():
		e.logger.Warn("Kubernetes Events not written before the shutdown deadline are dropped", zap.Error(ctx.Err()))
	}
	b.Shutdown()
	return nil
}

// flushSink writes Events to the API server, except the flush marker, which it turns into a signal.
type flushSink struct {
	record.EventSink
	flushed chan struct{}
	once    sync.Once
}

func (s *flushSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	if _, ok := ev.Annotations[flushAnnotation]; ok {
		s.once.Do(func() { close(s.flushed) })
		return ev, nil
	}
	return s.EventSink.Create(ev)
}
