// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadata"
)

// NewFactory creates the factory of the k8s_metadata_strip processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{SortKeys: true}
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := newStripProcessor(cfg.(*Config), set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(p.shutdown),
	)
}
