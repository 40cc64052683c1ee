// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// metrics builds the gauges of groups and the decision sums. Labels the model keeps on the resource (the cluster
// name) go on the resource, so the metrics of two clusters are two resources, as their records are.
func (c *policyMetrics) metrics(groups []*resultstate.Group, now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	b := metricsBuilder{md: md, scopes: map[string]*scope{}}
	ts := pcommon.NewTimestampFromTime(now)

	slices.SortFunc(groups, func(a, b *resultstate.Group) int { return slices.Compare(a.Values, b.Values) })
	labels := c.cfg.Results.Labels
	for _, g := range groups {
		gauge := b.scope(labels, g.Values).results().Gauge()
		for _, o := range policyresult.Outcomes {
			dp := gauge.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts)
			dp.SetIntValue(count(g.Counts, o))
			putLabels(dp.Attributes(), labels, g.Values)
			dp.Attributes().PutStr(policyresult.AttrResult, string(o))
		}
	}

	labels = c.cfg.Decisions.Labels
	for _, s := range c.decisions.order {
		dp := b.scope(labels, s.values).decisions().Sum().DataPoints().AppendEmpty()
		setDecisionPoint(dp, s, ts)
		putLabels(dp.Attributes(), labels, s.values)
	}
	if s := c.decisions.overflow; s != nil {
		dp := b.scope(nil, nil).decisions().Sum().DataPoints().AppendEmpty()
		setDecisionPoint(dp, s, ts)
		dp.Attributes().PutBool(policyresult.AttrMetricOverflow, true)
	}
	return md
}

func setDecisionPoint(dp pmetric.NumberDataPoint, s *decisionSeries, ts pcommon.Timestamp) {
	dp.SetStartTimestamp(s.start)
	dp.SetTimestamp(ts)
	dp.SetIntValue(s.count)
}

// putLabels writes the labels that are not resource attributes; an empty value is left out.
func putLabels(attrs pcommon.Map, names, values []string) {
	for i, name := range names {
		if !policyresult.IsResourceAttribute(name) && values[i] != "" {
			attrs.PutStr(name, values[i])
		}
	}
}

func count(c policyresult.Counts, o policyresult.Outcome) int64 {
	var one policyresult.Counts
	one.Add(o, 1)
	return c.Pass*one.Pass + c.Fail*one.Fail + c.Warn*one.Warn + c.Error*one.Error + c.Skip*one.Skip
}

// metricsBuilder keeps one ScopeMetrics per distinct set of resource attribute values.
type metricsBuilder struct {
	md     pmetric.Metrics
	scopes map[string]*scope
	key    strings.Builder
}

type scope struct {
	sm                     pmetric.ScopeMetrics
	resultsM, decisionsM   pmetric.Metric
	hasResults, hasDecided bool
}

func (b *metricsBuilder) scope(names, values []string) *scope {
	b.key.Reset()
	for i, name := range names {
		if policyresult.IsResourceAttribute(name) {
			b.key.WriteString(name + "=" + values[i] + "\x00")
		}
	}
	if s, ok := b.scopes[b.key.String()]; ok {
		return s
	}
	rm := b.md.ResourceMetrics().AppendEmpty()
	for i, name := range names {
		if policyresult.IsResourceAttribute(name) && values[i] != "" {
			rm.Resource().Attributes().PutStr(name, values[i])
		}
	}
	s := &scope{sm: rm.ScopeMetrics().AppendEmpty()}
	s.sm.Scope().SetName(metadata.ScopeName)
	b.scopes[b.key.String()] = s
	return s
}

func (s *scope) results() pmetric.Metric {
	if !s.hasResults {
		s.resultsM = s.sm.Metrics().AppendEmpty()
		s.resultsM.SetName(policyresult.MetricResults)
		s.resultsM.SetDescription("Current policy results by outcome.")
		s.resultsM.SetUnit("{result}")
		s.resultsM.SetEmptyGauge()
		s.hasResults = true
	}
	return s.resultsM
}

func (s *scope) decisions() pmetric.Metric {
	if !s.hasDecided {
		s.decisionsM = s.sm.Metrics().AppendEmpty()
		s.decisionsM.SetName(policyresult.MetricDecisions)
		s.decisionsM.SetDescription("Policy decisions since the series started.")
		s.decisionsM.SetUnit("{decision}")
		sum := s.decisionsM.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		s.hasDecided = true
	}
	return s.decisionsM
}
