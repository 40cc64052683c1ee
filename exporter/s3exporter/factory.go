// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
)

// Defaults of the settings that are not exporterhelper's.
const (
	defaultPartitionFormat = "date=%Y-%m-%d/hour=%H"
	// defaultPartitionValueMaxBytes keeps ordinary values (cluster names, engines, policy names) whole and
	// readable in keys, and leaves room for several attribute partitions in S3's 1,024 bytes.
	defaultPartitionValueMaxBytes = 128
	defaultMultipartThreshold     = 16 << 20
	defaultMultipartPartSize      = 8 << 20
)

// NewFactory creates the factory of the s3 exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	timeout := exporterhelper.NewDefaultTimeoutConfig()
	timeout.Timeout = defaultTimeout
	return &Config{
		S3Uploader: S3UploaderConfig{
			S3PartitionFormat: defaultPartitionFormat,
			Compression:       CompressionGzip,
		},
		Format:                 FormatNDJSON,
		PartitionValueMaxBytes: defaultPartitionValueMaxBytes,
		MultipartThreshold:     defaultMultipartThreshold,
		MultipartPartSize:      defaultMultipartPartSize,
		TimeoutConfig:          timeout,
		QueueConfig:            configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:            configretry.NewDefaultBackOffConfig(),
	}
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	e, err := newLogsExporter(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return e.helper(ctx, set)
}

// helper wraps e in exporterhelper's timeout, retry and queue, as the factory configures it.
func (e *logsExporter) helper(ctx context.Context, set exporter.Settings) (exporter.Logs, error) {
	return exporterhelper.NewLogs(ctx, set, e.cfg, e.consumeLogs,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(e.cfg.TimeoutConfig),
		exporterhelper.WithRetry(e.cfg.RetryConfig),
		exporterhelper.WithQueue(e.cfg.QueueConfig),
	)
}
