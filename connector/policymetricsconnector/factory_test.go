// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsToMetricsStability())
	assert.Equal(t, component.StabilityLevelUndefined, f.LogsToLogsStability(), "only logs to metrics")
}

func TestCreateDefaultConfigIsValid(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	assert.NoError(t, cfg.(*Config).Validate())
}

func TestCreateLogsToMetrics(t *testing.T) {
	f := NewFactory()
	c, err := f.CreateLogsToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type),
		f.CreateDefaultConfig(), new(consumertest.MetricsSink))
	require.NoError(t, err)
	assert.False(t, c.Capabilities().MutatesData, "records are read, never changed")
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, c.Shutdown(context.Background()))
}

func TestCreateLogsToLogsIsNotSupported(t *testing.T) {
	f := NewFactory()
	_, err := f.CreateLogsToLogs(context.Background(), connectortest.NewNopSettings(metadata.Type),
		f.CreateDefaultConfig(), consumertest.NewNop())
	assert.ErrorIs(t, err, pipeline.ErrSignalNotSupported)
}

func TestInvalidConfigIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Interval = 0
	cfg.Decisions.MaxSeries = 0
	err := cfg.Validate()
	assert.ErrorContains(t, err, "interval must be positive, got 0s")
	assert.ErrorContains(t, err, "decisions::max_series must be positive, got 0")
}
