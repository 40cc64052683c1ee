// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
)

type policyMetrics struct {
	component.StartFunc
	component.ShutdownFunc

	cfg  *Config
	set  connector.Settings
	next consumer.Metrics

	// decisions and values are used only under state's lock: in the batches it counts and in emit.
	decisions *decisionCounts
	values    []string
	state     *resultstate.Runner
}

func newConnector(cfg *Config, set connector.Settings, next consumer.Metrics) (*policyMetrics, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	c := &policyMetrics{
		cfg: cfg, set: set, next: next,
		decisions: newDecisionCounts(cfg.Decisions.Labels, cfg.Decisions.MaxSeries),
		values:    make([]string, len(cfg.Decisions.Labels)),
	}
	tally := resultstate.New(cfg.Results.Labels, cfg.MaxKeys)
	c.state = resultstate.NewRunner(tally, c.emit, resultstate.Settings{
		ID: set.ID, Kind: component.KindConnector, Logger: set.Logger, Interval: cfg.Interval, Storage: cfg.Storage,
		K8sLeaderElector: cfg.K8sLeaderElector, Extra: c.decisions, GroupByKey: "results::labels", InvalidRecord: "A result record cannot be counted; it is skipped",
		Telemetry: resultstate.Telemetry{Errors: tb.ConnectorPolicyMetricsErrors, Evictions: tb.ConnectorPolicyMetricsEvictions,
			Keys: tb.ConnectorPolicyMetricsKeys, Shutdown: tb.Shutdown},
	})
	c.StartFunc, c.ShutdownFunc = c.state.Start, c.state.Shutdown
	return c, nil
}

func (c *policyMetrics) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeLogs counts the batch: decisions into their sums, results into the state. With storage, the latest
// outcomes are written before the batch is acknowledged, so a batch the receiver saw accepted is counted after
// a crash too.
func (c *policyMetrics) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	now := time.Now()
	return c.state.Count(ctx, ld, func(res pcommon.Map, lr plog.LogRecord) bool {
		if !isDecision(lr) {
			return false
		}
		c.decisions.add(res, lr.Attributes(), c.values, now)
		return true
	})
}

// emit sends the gauges of every group and the decision sums. The gauges are the current state, so a refused
// emission is simply superseded by the next one.
func (c *policyMetrics) emit(ctx context.Context, t *resultstate.Tally) ([]*resultstate.Group, error) {
	var groups []*resultstate.Group
	t.All(func(g *resultstate.Group) { groups = append(groups, g) })
	if len(groups) == 0 && c.decisions.len() == 0 {
		return nil, resultstate.ErrNothingDue
	}
	if err := c.next.ConsumeMetrics(ctx, c.metrics(groups, time.Now())); err != nil {
		c.set.Logger.Warn("The next consumer refused the policy metrics; the next interval sends them again", zap.Error(err))
		return nil, err
	}
	// A group left empty was just reported as zero; marked emitted, it is forgotten from now on.
	return groups, nil
}
