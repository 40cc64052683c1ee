// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectorextension

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.Stability())
}

// The lease has no default name: two collectors that elect for different work must not share one by accident.
func TestCreateDefaultConfigNeedsALeaseName(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	c := cfg.(*Config)
	assert.Equal(t, k8sclient.AuthTypeServiceAccount, c.AuthType)
	assert.ErrorContains(t, c.Validate(), "lease_name must be set")

	c.LeaseName = "otelcol-policy"
	c.LeaseNamespace = "monitoring"
	assert.NoError(t, c.Validate(), "the default timings are consistent")
}

func TestCreateExtension(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.LeaseName = "otelcol-policy"
	cfg.LeaseNamespace = "monitoring"
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NotNil(t, ext)
	require.NoError(t, ext.Shutdown(context.Background()), "shutting down what never started")
}

func TestInvalidTimingsAreRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.LeaseName, cfg.LeaseNamespace = "l", "ns"
	cfg.RenewDeadline = cfg.LeaseDuration
	assert.ErrorContains(t, cfg.Validate(), "lease_duration (15s) must be longer than renew_deadline (15s)")
}
