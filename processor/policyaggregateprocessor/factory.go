// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

// NewFactory creates the factory of the policy_aggregate processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Interval: 30 * time.Second,
		GroupBy:  policyresult.DefaultSummaryGroup(),
		Results:  ResultsForward,
		MaxKeys:  1_000_000,
	}
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	lp, _, err := newLogsProcessor(ctx, set, cfg.(*Config), next)
	return lp, err
}

// newLogsProcessor also returns the aggregator, whose state tests flush instead of waiting for the interval.
func newLogsProcessor(ctx context.Context, set processor.Settings, cfg *Config, next consumer.Logs) (processor.Logs, *aggregator, error) {
	p, err := newAggregator(cfg, set, next)
	if err != nil {
		return nil, nil, err
	}
	lp, err := processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithStart(p.state.Start),
		processorhelper.WithShutdown(p.state.Shutdown),
		// Dropping result records in place is a mutation.
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: cfg.Results == ResultsDrop}),
	)
	return lp, p, err
}
