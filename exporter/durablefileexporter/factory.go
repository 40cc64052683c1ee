// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter/internal/metadata"
)

// NewFactory creates the factory of the durable_file exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		FilePermissions: "0640",
		Sync:            true,
		Rotation:        RotationConfig{MaxMegabytes: 100, MaxBackups: 10},
		TimeoutConfig:   exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:     configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:     configretry.NewDefaultBackOffConfig(),
	}
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e := newLogsExporter(c, set.Logger)
	return exporterhelper.NewLogs(ctx, set, cfg, e.consumeLogs,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
	)
}
