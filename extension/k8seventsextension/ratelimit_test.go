// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/extensiontest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
)

// A component that keeps failing gets burst Warnings through and no more (the kubelet's spam filter, per Pod
// and event type, in the client: what it drops never reaches the API server), while its recovery, a Normal
// Event, still gets through.
func TestSpamFilterDropsEventsOverTheBurst(t *testing.T) {
	const ns = "otelcol-policy"
	srv := fakeapiserver.Start(t)
	eventsGVR := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	srv.Serve(eventsGVR, "Event", true)
	kubeconfig := srv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kubeconfig)

	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.PodName, cfg.PodNamespace, cfg.PodUID = "otelcol-policy-0", ns, "0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01"
	// The default refill (one Event every 300 s) adds no token while the test runs.
	cfg.Burst = 3
	require.NoError(t, cfg.Validate())
	e := newEventsExtension(cfg, extensiontest.NewNopSettings(metadata.Type))
	require.NoError(t, e.Start(context.Background(), nil))

	e.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusStarting))
	e.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusOK))
	// Distinct messages, so that each is an Event of its own rather than a count on the first.
	for i := 1; i <= 5; i++ {
		e.Changed(exporterID, componentstatus.NewRecoverableErrorEvent(fmt.Errorf("down %d", i)))
	}
	e.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusOK))
	// Shutdown returns once every recorded Event was written or dropped.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Shutdown(ctx))
	require.NoError(t, ctx.Err(), "Shutdown flushed the queue before its deadline")

	creates := 0
	for _, r := range srv.Requests() {
		if r.GVR == eventsGVR {
			assert.Equal(t, "create", r.Verb, "no Event aggregated into another (PATCH): every message differs")
			creates++
		}
	}
	assert.Equal(t, 4, creates, "three Warnings and the recovery written")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var got []string
	for _, ev := range list.Items {
		got = append(got, ev.Type+" "+ev.Message)
	}
	const prefix = "exporter results_grpc/fleet (pipelines logs, logs/ship)"
	assert.ElementsMatch(t, []string{
		"Warning " + prefix + ": down 1",
		"Warning " + prefix + ": down 2",
		"Warning " + prefix + ": down 3",
		"Normal " + prefix + " recovered",
	}, got, "down 4 and down 5 are over the burst of 3 Warnings and dropped")
}
