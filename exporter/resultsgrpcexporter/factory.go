// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadata"
)

const (
	defaultMaxResultsPerRequest = 1000
	// 4 MiB is the default largest message of gRPC servers; the margin covers extra_metadata and framing.
	defaultMaxRequestBytes = 4<<20 - 64<<10
)

// NewFactory creates the factory of the results_grpc exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		ClientConfig:         configgrpc.NewDefaultClientConfig(),
		MaxResultsPerRequest: defaultMaxResultsPerRequest,
		MaxRequestBytes:      defaultMaxRequestBytes,
		TimeoutConfig:        exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:          configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:          configretry.NewDefaultBackOffConfig(),
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
