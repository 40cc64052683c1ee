// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
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

// The decision sums are a resultstate.Extra: stored beside the result state, so that they continue, with
// their start times, across restarts and from one leader to the next instead of starting again from zero.
var _ resultstate.Extra = (*decisionCounts)(nil)

// storedDecisions is the stored entry: the labels the sums were counted by, and every series in creation order.
type storedDecisions struct {
	Labels   []string       `json:"labels"`
	Series   []storedSeries `json:"series"`
	Overflow *storedSeries  `json:"overflow,omitempty"`
}

type storedSeries struct {
	Values []string `json:"values,omitempty"`
	Count  int64    `json:"count"`
	// Start is in nanoseconds since the Unix epoch, as the data point's start timestamp.
	Start uint64 `json:"start"`
}

func (d *decisionCounts) Name() string { return "decisions" }

func (d *decisionCounts) Reset() {
	d.series, d.order, d.overflow = map[string]*decisionSeries{}, nil, nil
}

func (d *decisionCounts) Encode() ([]byte, error) {
	st := storedDecisions{Labels: d.names, Series: make([]storedSeries, len(d.order))}
	for i, s := range d.order {
		st.Series[i] = storedSeries{Values: s.values, Count: s.count, Start: uint64(s.start)}
	}
	if d.overflow != nil {
		st.Overflow = &storedSeries{Count: d.overflow.count, Start: uint64(d.overflow.start)}
	}
	return json.Marshal(st)
}

// Load reads stored sums. Sums counted by other labels cannot be re-labelled: they are discarded, and the new
// series start from zero with start times of now, which is how a cumulative sum says that it restarted.
func (d *decisionCounts) Load(b []byte) error {
	var st storedDecisions
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	if !slices.Equal(st.Labels, d.names) {
		return fmt.Errorf("%w (%v, now %v)", resultstate.ErrRegrouped, st.Labels, d.names)
	}
	for _, ss := range st.Series {
		if len(ss.Values) != len(d.names) {
			return fmt.Errorf("a series with %d label values, want %d", len(ss.Values), len(d.names))
		}
		s := &decisionSeries{values: ss.Values, count: ss.Count, start: pcommon.Timestamp(ss.Start)}
		d.series[string(policyresult.AppendFields(nil, ss.Values...))] = s
		d.order = append(d.order, s)
	}
	if st.Overflow != nil {
		d.overflow = &decisionSeries{count: st.Overflow.Count, start: pcommon.Timestamp(st.Overflow.Start)}
	}
	return nil
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
