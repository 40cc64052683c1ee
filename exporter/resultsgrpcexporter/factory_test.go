// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

// Only the endpoint is missing; results go over TLS unless plain text is asked for.
func TestCreateDefaultConfigNeedsAnEndpoint(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.EqualError(t, cfg.Validate(), "endpoint must be set")
	assert.False(t, cfg.ClientConfig.TLS.Insecure)
	cfg.ClientConfig.Endpoint = "results.example.com:4317"
	assert.NoError(t, cfg.Validate())
}

// The connection is made lazily: the exporter starts before the server is reachable.
func TestCreateLogs(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "results.invalid:4317"
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	assert.False(t, exp.Capabilities().MutatesData)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestStartFailsOnAMissingCAFile(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "results.example.com:4317"
	cfg.ClientConfig.TLS.CAFile = filepath.Join(t.TempDir(), "missing-ca.pem")
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	assert.ErrorContains(t, exp.Start(context.Background(), componenttest.NewNopHost()), "missing-ca.pem")
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestInvalidConfigIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "results.example.com:4317"
	cfg.MaxResultsPerRequest = 0
	assert.EqualError(t, cfg.Validate(), "max_results_per_request must be positive, got 0")
}
