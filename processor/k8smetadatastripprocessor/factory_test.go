// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

func TestCreateDefaultConfigIsValid(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	assert.NoError(t, cfg.(*Config).Validate())
	assert.True(t, cfg.(*Config).SortKeys)
}

func TestCreateLogs(t *testing.T) {
	f := NewFactory()
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	assert.True(t, p.Capabilities().MutatesData, "the objects are stripped in place")
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, p.Shutdown(context.Background()))
}

// A configuration the collector would have refused is refused by the factory too, with the same error.
func TestCreateLogsRefusesAPathThatIsNotADefault(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Keep = []string{"spec.replicas"}
	validateErr := cfg.Validate()
	require.ErrorContains(t, validateErr, `keep: "spec.replicas" is not removed by default`)
	_, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	assert.EqualError(t, err, validateErr.Error())
}
