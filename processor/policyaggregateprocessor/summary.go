// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor"

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

// emit sends a summary of every group whose counts changed since its last summary.
func (p *aggregator) emit(ctx context.Context, t *resultstate.Tally) ([]*resultstate.Group, error) {
	var groups []*resultstate.Group
	t.Changed(func(g *resultstate.Group) { groups = append(groups, g) })
	if len(groups) == 0 {
		return nil, resultstate.ErrNothingDue
	}
	slices.SortFunc(groups, func(a, b *resultstate.Group) int { return slices.Compare(a.Values, b.Values) })
	if err := p.next.ConsumeLogs(ctx, p.summaries(groups, time.Now())); err != nil {
		p.set.Logger.Warn("The next consumer refused the summaries; they are retried at the next interval, "+
			"or after the next start if storage is configured", zap.Int("groups", len(groups)), zap.Error(err))
		return nil, err
	}
	p.telemetry.ProcessorPolicyAggregateSummaries.Add(ctx, int64(len(groups)))
	return groups, nil
}

// summaries builds one record per group. Group attributes the model keeps on the resource (the cluster name)
// go on the resource, so summaries look like the results they count; groups sharing those values share a
// resource.
func (p *aggregator) summaries(groups []*resultstate.Group, now time.Time) plog.Logs {
	ld := plog.NewLogs()
	byResource := map[string]plog.LogRecordSlice{}
	ts := pcommon.NewTimestampFromTime(now)
	var resKey strings.Builder
	for _, g := range groups {
		resKey.Reset()
		s := policyresult.Summary{Key: g.Key, Counts: g.Counts, Change: g.Counts.Sub(g.Emitted), Timestamp: now}
		for i, name := range p.cfg.GroupBy {
			if policyresult.IsResourceAttribute(name) {
				resKey.WriteString(name + "=" + g.Values[i] + "\x00")
				continue
			}
			s.Attributes = append(s.Attributes, policyresult.Attribute{Name: name, Value: g.Values[i]})
		}
		lrs, ok := byResource[resKey.String()]
		if !ok {
			rl := ld.ResourceLogs().AppendEmpty()
			for i, name := range p.cfg.GroupBy {
				if policyresult.IsResourceAttribute(name) && g.Values[i] != "" {
					rl.Resource().Attributes().PutStr(name, g.Values[i])
				}
			}
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(metadata.ScopeName)
			lrs = sl.LogRecords()
			byResource[resKey.String()] = lrs
		}
		lr := lrs.AppendEmpty()
		policyresult.WriteSummaryLogRecord(&s, lr)
		lr.SetObservedTimestamp(ts)
	}
	return ld
}
