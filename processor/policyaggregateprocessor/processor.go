// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

type aggregator struct {
	cfg       *Config
	set       processor.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder

	// tally is read and written only under state's lock: in summaries, or by tests.
	tally *resultstate.Tally
	state *resultstate.Runner
}

func newAggregator(cfg *Config, set processor.Settings, next consumer.Logs) (*aggregator, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &aggregator{cfg: cfg, set: set, next: next, telemetry: tb, tally: resultstate.New(cfg.GroupBy, cfg.MaxKeys)}
	p.state = resultstate.NewRunner(p.tally, p.emit, resultstate.Settings{
		ID: set.ID, Kind: component.KindProcessor, Logger: set.Logger, Interval: cfg.Interval, Storage: cfg.Storage,
		K8sLeaderElector: cfg.K8sLeaderElector, GroupByKey: "group_by", InvalidRecord: "A result record cannot be aggregated; it is passed on unchanged",
		Telemetry: resultstate.Telemetry{Errors: tb.ProcessorPolicyAggregateErrors, Evictions: tb.ProcessorPolicyAggregateEvictions,
			Keys: tb.ProcessorPolicyAggregateKeys, Groups: tb.ProcessorPolicyAggregateGroups, Shutdown: tb.Shutdown},
	})
	return p, nil
}

// processLogs counts the result records and passes everything on; with results: drop it removes the counted
// result records. The state is written before the batch is passed on, so a batch the previous stage sees
// accepted is never missing from the state after a crash.
func (p *aggregator) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	if err := p.state.Count(ctx, ld, nil); err != nil {
		return ld, err
	}
	if p.cfg.Results == ResultsDrop {
		dropCounted(ld)
		if ld.LogRecordCount() == 0 {
			return ld, processorhelper.ErrSkipProcessingData
		}
	}
	return ld, nil
}

// dropCounted removes the result records the state counted. Invalid ones continue, since the state does not
// represent them.
func dropCounted(ld plog.Logs) {
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes()
		for _, sl := range rl.ScopeLogs().All() {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				_, ok, err := resultstate.ReadRecord(res, lr)
				return ok && err == nil
			})
		}
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool { return sl.LogRecords().Len() == 0 })
	}
	ld.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool { return rl.ScopeLogs().Len() == 0 })
}
