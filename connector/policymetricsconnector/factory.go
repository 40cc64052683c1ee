// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// NewFactory creates the factory of the policy_metrics connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithLogsToMetrics(createLogsToMetrics, metadata.LogsToMetricsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Interval: 30 * time.Second,
		Results:  ResultsConfig{Labels: []string{policyresult.AttrSource, policyresult.AttrPolicy}},
		Decisions: DecisionsConfig{
			Labels:    []string{policyresult.AttrSource, policyresult.AttrPolicy, policyresult.AttrDecisionAction},
			MaxSeries: 10_000,
		},
		MaxKeys: 1_000_000,
	}
}

func createLogsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Logs, error) {
	return newConnector(cfg.(*Config), set, next)
}
