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

// flush emits a summary of every group whose counts changed since its last summary. The lock is held while the
// next consumer takes them, so that what is marked emitted is exactly what was sent.
func (p *aggregator) flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var groups []*resultstate.Group
	p.tally.Changed(func(g *resultstate.Group) { groups = append(groups, g) })
	if len(groups) == 0 {
		return nil
	}
	slices.SortFunc(groups, func(a, b *resultstate.Group) int { return slices.Compare(a.Values, b.Values) })
	ld := p.summaries(groups, time.Now())
	if err := p.next.ConsumeLogs(ctx, ld); err != nil {
		p.countError(ctx, "consume", 1)
		p.set.Logger.Warn("The next consumer refused the summaries; they are retried at the next interval",
			zap.Int("groups", len(groups)), zap.Error(err))
		return err
	}
	p.telemetry.ProcessorPolicyAggregateSummaries.Add(ctx, int64(len(groups)))
	for _, g := range groups {
		p.tally.MarkEmitted(g)
	}
	p.reportSizes(ctx)
	if err := p.save(ctx); err != nil {
		// The summaries went out; the state is written with the next batch or summary.
		p.set.Logger.Warn("Storing the emitted summaries failed", zap.Error(err))
	}
	return nil
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
