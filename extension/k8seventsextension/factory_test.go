// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.Stability())
}

// In a Pod whose env sets the downward API variables, the default configuration is complete.
func TestCreateDefaultConfigFromTheDownwardAPI(t *testing.T) {
	t.Setenv(envPodName, "otelcol-policy-0")
	t.Setenv(envPodNamespace, "otelcol-policy")
	t.Setenv(envPodUID, "6f1c2f0e-8b7a-4a52-9d2e-0c3b5a1e7f44")
	c := NewFactory().CreateDefaultConfig().(*Config)
	assert.Equal(t, k8sclient.AuthTypeServiceAccount, c.AuthType)
	assert.Equal(t, "otelcol-policy-0", c.PodName)
	assert.Equal(t, "otelcol-policy", c.PodNamespace)
	assert.Equal(t, "6f1c2f0e-8b7a-4a52-9d2e-0c3b5a1e7f44", c.PodUID)
	assert.InDelta(t, 1./300., c.QPS, 1e-9, "the kubelet's spam filter: one event per five minutes after the burst")
	assert.Equal(t, 25, c.Burst)
	assert.NoError(t, c.Validate())

	t.Setenv(envPodUID, "")
	assert.ErrorContains(t, NewFactory().CreateDefaultConfig().(*Config).Validate(), "pod_uid must be set")
}

func TestCreateExtension(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.PodName, cfg.PodNamespace, cfg.PodUID = "p", "ns", "uid"
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NotNil(t, ext)
	require.NoError(t, ext.Shutdown(context.Background()), "shutting down what never started")
}

// Outside a cluster, auth_type serviceAccount cannot work: Start says why instead of running without Events.
func TestStartOutsideAClusterFails(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cfg := createDefaultConfig().(*Config)
	cfg.PodName, cfg.PodNamespace, cfg.PodUID = "p", "ns", "uid"
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	assert.ErrorContains(t, ext.Start(context.Background(), nil), "auth_type serviceAccount")
	require.NoError(t, ext.Shutdown(context.Background()))
}
