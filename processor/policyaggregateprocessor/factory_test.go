// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

func TestCreateDefaultConfigIsValid(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	assert.NoError(t, cfg.(*Config).Validate())
}

func TestCreateLogs(t *testing.T) {
	for _, tt := range []struct {
		results ResultsMode
		mutates bool
	}{
		{ResultsForward, false},
		// Dropping the result records changes the batch in place.
		{ResultsDrop, true},
	} {
		t.Run(string(tt.results), func(t *testing.T) {
			f := NewFactory()
			cfg := f.CreateDefaultConfig().(*Config)
			cfg.Results = tt.results
			p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			assert.Equal(t, tt.mutates, p.Capabilities().MutatesData)
			require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(t, p.Shutdown(context.Background()))
		})
	}
}

func TestInvalidConfigIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.GroupBy = nil
	cfg.Results = "keep"
	err := cfg.Validate()
	assert.ErrorContains(t, err, "group_by must name at least one attribute")
	assert.ErrorContains(t, err, `results must be "forward" or "drop", got "keep"`)
}
