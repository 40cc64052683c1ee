// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package handover

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// tally is what the replicas of one deployment exported, each to a sink of its own: every result record by key
// and replica, the latest summary of each group and the latest point of each policy.results series. It keeps
// counts, not records: at full scale the records would take gigabytes of the test's memory.
type tally struct {
	mu   sync.Mutex
	want int // distinct results expected
	// byKey counts each result's records per replica.
	byKey  map[string][2]int32
	states map[policyresult.State]int
	// first is when each replica's sink received its first result record; complete when the sinks together
	// first held want distinct results.
	first    [2]time.Time
	complete time.Time
	// summaries and gauges are the latest by timestamp: a restarted replica's queue delivers older ones late.
	summaries      map[string]policyresult.Summary
	summaryRecords int
	// changes adds up the changes of each group's summaries, each emission once (a queue's replay sends the
	// same record again).
	changes   map[string]policyresult.Counts
	emissions map[string]bool // group key and timestamp
	gauges    map[string]gaugePoint
	err       error // the first record that could not be read
}

type gaugePoint struct {
	ts    pcommon.Timestamp
	value int64
}

func newTally(want int) *tally {
	return &tally{want: want, byKey: make(map[string][2]int32, want), states: map[policyresult.State]int{},
		summaries: map[string]policyresult.Summary{}, gauges: map[string]gaugePoint{},
		changes: map[string]policyresult.Counts{}, emissions: map[string]bool{}}
}

// sink serves the exporter of replica i (0 or 1).
func (t *tally) sink(tb testing.TB, i int) *collectortest.OTLPSink {
	return collectortest.StartOTLPFunc(tb, func(ld plog.Logs) { t.logs(i, ld) }, t.metrics)
}

func (t *tally) logs(replica int, ld plog.Logs) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	collectortest.EachLogRecord(ld, func(res pcommon.Resource, lr plog.LogRecord) {
		switch policyresult.EventName(lr) {
		case policyresult.EventResult:
			r, err := policyresult.ReadLogRecord(res, lr)
			if err != nil {
				t.fail(err)
				return
			}
			key := r.Key()
			n, seen := t.byKey[key]
			n[replica]++
			t.byKey[key] = n
			if !seen && len(t.byKey) == t.want {
				t.complete = now
			}
			t.states[r.State]++
			if t.first[replica].IsZero() {
				t.first[replica] = now
			}
		case policyresult.EventSummary:
			s, err := policyresult.ReadSummaryLogRecord(lr)
			if err != nil {
				t.fail(err)
				return
			}
			t.summaryRecords++
			if id := s.Key + "@" + s.Timestamp.String(); !t.emissions[id] {
				t.emissions[id] = true
				// a + b, as a − (0 − b).
				t.changes[s.Key] = t.changes[s.Key].Sub(policyresult.Counts{}.Sub(s.Change))
			}
			if old, ok := t.summaries[s.Key]; !ok || s.Timestamp.After(old.Timestamp) {
				t.summaries[s.Key] = s
			}
		default:
			t.fail(fmt.Errorf("a record of event %q", policyresult.EventName(lr)))
		}
	})
}

func (t *tally) metrics(md pmetric.Metrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != policyresult.MetricResults {
					continue
				}
				for _, dp := range m.Gauge().DataPoints().All() {
					id := seriesID(rm.Resource().Attributes(), dp.Attributes())
					if old, ok := t.gauges[id]; !ok || dp.Timestamp() > old.ts {
						t.gauges[id] = gaugePoint{dp.Timestamp(), dp.IntValue()}
					}
				}
			}
		}
	}
}

func (t *tally) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// seriesID names a series by its attributes, resource and point alike, as name=value sorted.
func seriesID(maps ...pcommon.Map) string {
	var kv []string
	for _, m := range maps {
		for k, v := range m.All() {
			kv = append(kv, k+"="+v.AsString())
		}
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

// delivered is what the sinks hold now, against the results of the reports.
type delivered struct {
	Distinct int `json:"distinct_results"`
	Records  int `json:"result_records"`
	Missing  int `json:"missing"`
	Foreign  int `json:"foreign"` // results no report has
	// Duplicates are records beyond the first of each result: Reemitted, the results both replicas exported (the
	// new leader emitted what the old one had accepted into its queue but not yet recorded as emitted), and
	// Replayed, a replica's records beyond the first of a result (its queue exported them again after a restart).
	Duplicates int            `json:"duplicates"`
	Reemitted  int            `json:"duplicates_reemitted"`
	Replayed   [2]int         `json:"duplicates_replayed"`
	States     map[string]int `json:"states"`
	PerReplica [2]int         `json:"result_records_per_replica"`
	first      [2]time.Time   // see tally
	complete   time.Time      // see tally
	summaries  map[string]policyresult.Counts
	gauges     map[string]int64
	// someMissing names a few missing results, for the failure message.
	someMissing []string
}

func (t *tally) delivered(want map[string]bool) (delivered, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := delivered{Distinct: len(t.byKey), States: map[string]int{}, first: t.first, complete: t.complete}
	for key, n := range t.byKey {
		if !want[key] {
			d.Foreign++
		}
		for i, c := range n {
			d.PerReplica[i] += int(c)
			d.Replayed[i] += max(int(c)-1, 0)
		}
		if n[0] > 0 && n[1] > 0 {
			d.Reemitted++
		}
	}
	for key := range want {
		if _, ok := t.byKey[key]; !ok {
			if d.Missing++; d.Missing <= 5 {
				d.someMissing = append(d.someMissing, key)
			}
		}
	}
	d.Records = d.PerReplica[0] + d.PerReplica[1]
	d.Duplicates = d.Records - d.Distinct
	for s, n := range t.states {
		d.States[string(s)] = n
	}
	d.summaries, d.gauges = t.latestLocked()
	return d, t.err
}

// latest are the counts of the latest summary of each group and the latest value of each series.
func (t *tally) latest() (map[string]policyresult.Counts, map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latestLocked()
}

func (t *tally) latestLocked() (map[string]policyresult.Counts, map[string]int64) {
	summaries, gauges := make(map[string]policyresult.Counts, len(t.summaries)), make(map[string]int64, len(t.gauges))
	for k, s := range t.summaries {
		summaries[k] = s.Counts
	}
	for k, g := range t.gauges {
		gauges[k] = g.value
	}
	return summaries, gauges
}

// changesAddUp says whether each group's summaries, their changes added up, give its latest counts: what a
// backend that keeps only the changes holds. "" when they do.
func (t *tally) changesAddUp() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	counts, _ := t.latestLocked()
	return diff("changes added up", t.changes, counts)
}

// summaryRecordCount is how many summary records arrived, duplicates and superseded ones included.
func (t *tally) summaryRecordCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.summaryRecords
}
