// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const (
	defaultTopic           = "otelcol-policy-results"
	defaultClientID        = "otelcol-policy"
	defaultMaxMessageBytes = 1_000_000
)

// NewFactory creates the factory of the kafka exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	queue := exporterhelper.NewDefaultQueueConfig()
	// One consumer keeps batches in order: with several, a batch that is retried can land after a later batch
	// holding a newer outcome of the same result, and a compacted topic would keep the older one.
	queue.NumConsumers = 1
	return &Config{
		ClientID: defaultClientID,
		Logs:     LogsConfig{Topic: defaultTopic, Encoding: EncodingJSON},
		Producer: ProducerConfig{
			RequiredAcks:    -1,
			Compression:     CompressionNone,
			MaxMessageBytes: defaultMaxMessageBytes,
			// As the contrib kafka exporter, and as Kafka's own producers ask by default.
			AllowAutoTopicCreation: true,
		},
		RecordKeyAttribute: policyresult.AttrResultKey,
		TimeoutConfig:      exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:        configoptional.Some(queue),
		RetryConfig:        configretry.NewDefaultBackOffConfig(),
	}
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e, err := newLogsExporter(c, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, e.consumeLogs,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
	)
}
