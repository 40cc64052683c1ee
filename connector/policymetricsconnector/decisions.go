// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// decisionSeries is one series of the policy.decisions sum.
type decisionSeries struct {
	values []string
	count  int64
	start  pcommon.Timestamp
}

// decisionCounts counts decisions by label values, in at most maxSeries series plus one overflow series.
type decisionCounts struct {
	names     []string
	maxSeries int
	series    map[string]*decisionSeries
	// order keeps creation order, so that emitted metrics come out the same way every time.
	order    []*decisionSeries
	overflow *decisionSeries
	buf      []byte
}

func newDecisionCounts(names []string, maxSeries int) *decisionCounts {
	return &decisionCounts{names: names, maxSeries: maxSeries, series: map[string]*decisionSeries{}}
}

func (d *decisionCounts) len() int {
	n := len(d.order)
	if d.overflow != nil {
		n++
	}
	return n
}

// add counts one decision; values is scratch space.
func (d *decisionCounts) add(res, attrs pcommon.Map, values []string, now time.Time) {
	values = values[:len(d.names)]
	policyresult.LookupStrings(res, attrs, d.names, values)
	b := policyresult.AppendFields(d.buf[:0], values...)
	d.buf = b
	s, ok := d.series[string(b)]
	switch {
	case ok:
	case len(d.order) < d.maxSeries:
		s = &decisionSeries{values: append([]string(nil), values...), start: pcommon.NewTimestampFromTime(now)}
		d.series[string(b)] = s
		d.order = append(d.order, s)
	default:
		if d.overflow == nil {
			d.overflow = &decisionSeries{start: pcommon.NewTimestampFromTime(now)}
		}
		s = d.overflow
	}
	s.count++
}

// isDecision reports whether lr is a policy.decision record.
func isDecision(lr plog.LogRecord) bool {
	return policyresult.EventName(lr) == policyresult.EventDecision
}
