// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

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

// With the API server unreachable, Shutdown gives up on the queued Events at its deadline and says so.
func TestShutdownKeepsItsDeadline(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, closedPort(t))), 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.PodName, cfg.PodNamespace, cfg.PodUID = "p", "ns", "uid"
	core, logs := observer.New(zap.WarnLevel)
	set := extensiontest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), nil))
	ext.(extensioncapabilities.ComponentStatusWatcher).Changed(exporterID, componentstatus.NewRecoverableErrorEvent(errors.New("down")))

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.NoError(t, ext.Shutdown(ctx))
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, 1, logs.FilterMessage("Kubernetes Events not written before the shutdown deadline are dropped").Len())
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}
