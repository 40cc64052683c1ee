// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

func TestCreateDefaultConfigNeedsBrokers(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.EqualError(t, cfg.Validate(), "brokers must list at least one broker")
	cfg.Brokers = []string{"kafka:9092"}
	assert.NoError(t, cfg.Validate())
}

// Creating the exporter connects to nothing; the factory's exporter, with its default queue and retries,
// delivers to the broker once started and drains its queue on Shutdown.
func TestCreateLogsWithTheDefaultQueue(t *testing.T) {
	c := newCluster(t)
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Brokers = c.ListenAddrs()
	cfg.Logs.Topic = testTopic
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	assert.False(t, exp.Capabilities().MutatesData)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(3, "latest tag")))
	require.NoError(t, exp.Shutdown(context.Background()))

	assert.Len(t, consume(t, c.ListenAddrs(), 3, testTopic), 3)
}

func TestInvalidConfigIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{"kafka:9092", " "}
	cfg.Logs.Encoding = "avro"
	err := cfg.Validate()
	assert.ErrorContains(t, err, "brokers[1] is empty")
	assert.ErrorContains(t, err, `logs::encoding must be json or otlp_proto, got "avro"`)
}
