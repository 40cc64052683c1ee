// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pipeline"
	"k8s.io/client-go/tools/record"

	"github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension/internal/metadata"
)

var (
	exporterID = componentstatus.NewInstanceID(component.MustNewIDWithName("results_grpc", "fleet"), component.KindExporter,
		pipeline.NewIDWithName(pipeline.SignalLogs, "ship"), pipeline.NewID(pipeline.SignalLogs))
	extensionID = componentstatus.NewInstanceID(component.MustNewID("k8s_leader_elector"), component.KindExtension)
)

func TestEventForEachStatus(t *testing.T) {
	down := errors.New(`rpc error: code = Unavailable desc = connection refused`)
	for _, tt := range []struct {
		name   string
		prev   componentstatus.Status
		ev     *componentstatus.Event
		source *componentstatus.InstanceID
		want   *kubeEvent
	}{
		{"starting", componentstatus.StatusNone, componentstatus.NewEvent(componentstatus.StatusStarting), exporterID, nil},
		{"first OK", componentstatus.StatusStarting, componentstatus.NewEvent(componentstatus.StatusOK), exporterID, nil},
		{"OK again", componentstatus.StatusOK, componentstatus.NewEvent(componentstatus.StatusOK), exporterID, nil},
		{"recoverable", componentstatus.StatusOK, componentstatus.NewRecoverableErrorEvent(down), exporterID, &kubeEvent{
			"Warning", "ComponentRecoverableError", "exporter results_grpc/fleet (pipelines logs, logs/ship): " + down.Error(),
		}},
		{"recoverable again", componentstatus.StatusRecoverableError, componentstatus.NewRecoverableErrorEvent(down), exporterID, &kubeEvent{
			"Warning", "ComponentRecoverableError", "exporter results_grpc/fleet (pipelines logs, logs/ship): " + down.Error(),
		}},
		{"permanent", componentstatus.StatusRecoverableError, componentstatus.NewPermanentErrorEvent(errors.New("bad")), exporterID, &kubeEvent{
			"Warning", "ComponentPermanentError", "exporter results_grpc/fleet (pipelines logs, logs/ship): bad",
		}},
		{"fatal", componentstatus.StatusStarting, componentstatus.NewFatalErrorEvent(errors.New("listen: address in use")), extensionID, &kubeEvent{
			"Warning", "ComponentFatalError", "extension k8s_leader_elector: listen: address in use",
		}},
		{"error without text", componentstatus.StatusOK, componentstatus.NewEvent(componentstatus.StatusRecoverableError), extensionID, &kubeEvent{
			"Warning", "ComponentRecoverableError", "extension k8s_leader_elector: no error given",
		}},
		{"recovered", componentstatus.StatusRecoverableError, componentstatus.NewEvent(componentstatus.StatusOK), exporterID, &kubeEvent{
			"Normal", "ComponentRecovered", "exporter results_grpc/fleet (pipelines logs, logs/ship) recovered",
		}},
		{"stopping after an error", componentstatus.StatusRecoverableError, componentstatus.NewEvent(componentstatus.StatusStopping), exporterID, nil},
		{"stopped", componentstatus.StatusStopping, componentstatus.NewEvent(componentstatus.StatusStopped), exporterID, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := eventFor(tt.source, tt.prev, tt.ev)
			if tt.want == nil {
				assert.False(t, ok, "%+v", got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, *tt.want, got)
		})
	}
}

func TestDescribeOnePipeline(t *testing.T) {
	id := componentstatus.NewInstanceID(component.MustNewID("k8s_reports"), component.KindReceiver, pipeline.NewID(pipeline.SignalLogs))
	assert.Equal(t, "receiver k8s_reports (pipeline logs)", describe(id))
}

func TestLongErrorsAreCut(t *testing.T) {
	got, ok := eventFor(extensionID, componentstatus.StatusOK, componentstatus.NewRecoverableErrorEvent(errors.New(strings.Repeat("é", 1000))))
	require.True(t, ok)
	assert.LessOrEqual(t, len(got.Message), maxMessageBytes)
	assert.True(t, utf8.ValidString(got.Message))
	assert.True(t, strings.HasSuffix(got.Message, "é…"), got.Message[len(got.Message)-10:])
}

// The extension keeps each component's status apart: one component's error does not make another's first OK a
// recovery.
func TestStatusesAreTrackedPerComponent(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.PodName, cfg.PodNamespace, cfg.PodUID = "p", "ns", "uid"
	e := newEventsExtension(cfg, extensiontest.NewNopSettings(metadata.Type))
	rec := record.NewFakeRecorder(10)
	e.recorder = rec
	e.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusStarting))
	e.Changed(extensionID, componentstatus.NewEvent(componentstatus.StatusStarting))
	e.Changed(exporterID, componentstatus.NewRecoverableErrorEvent(errors.New("down")))
	e.Changed(extensionID, componentstatus.NewEvent(componentstatus.StatusOK))
	e.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusOK))
	e.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusOK))
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	assert.Equal(t, []string{
		"Warning ComponentRecoverableError exporter results_grpc/fleet (pipelines logs, logs/ship): down",
		"Normal ComponentRecovered exporter results_grpc/fleet (pipelines logs, logs/ship) recovered",
	}, got)
}
