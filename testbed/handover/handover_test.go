// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package handover tests the leader-elected report watcher under load: two replicas of the shipped StatefulSet's
// collector config against a real API server, the leader SIGKILLed in the middle of the initial sync. The other
// replica takes over once the Lease expires and finishes from the state on the shared directory; the killed one
// comes back on its own persistent queue and sends what it had accepted. Every result must arrive, duplicates
// only from what was in flight, and the summaries and gauges must be those of a replica that was never killed.
package handover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/pssreports"
)

// scale of one run: TESTBED_SCALE=full for `make testbed`, a small run otherwise.
type scale struct {
	Name       string `json:"scale"`
	Reports    int    `json:"reports"`
	Namespaces int    `json:"namespaces"`
	// KillAtPercent is how much of the initial sync the leader has exported when it is killed.
	KillAtPercent int `json:"kill_at_percent"`
}

func currentScale() scale {
	if os.Getenv("TESTBED_SCALE") == "full" {
		return scale{Name: "full", Reports: 10000, Namespaces: 50, KillAtPercent: 30}
	}
	return scale{Name: "small", Reports: 1000, Namespaces: 10, KillAtPercent: 30}
}

const (
	lease          = "otelcol-policy-reports"
	referenceLease = "otelcol-policy-reference"
	startedLeading = "Started leading"
)

func TestHandoverUnderLoad(t *testing.T) {
	sc := currentScale()
	began := time.Now()
	cfg := loadStatefulSetConfig(t)
	c := apiserver.StartForTest(t)
	c.InstallCRDs(t, filepath.Join(collectortest.RepoRoot(t), pssreports.CRD))
	c.CreateNamespace(t, cfg.leaseNamespace)
	in := input{reports: sc.Reports, namespaces: sc.Namespaces}
	created := time.Now()
	in.create(t, c)
	t.Logf("created %d PolicyReports (%d results) in %s", in.reports, in.results(), time.Since(created).Round(time.Millisecond))
	want := expect(t, in, cfg.gaugeLabels)
	require.Len(t, want.keys, in.results(), "every result has a key of its own")
	kubeconfig := c.Kubeconfig(t, apiserver.AdminToken)
	res := result{scale: sc, Results: in.results(), ReemitBound: cfg.maxBatchRecords + pssreports.ResultsPerReport - 1,
		ReplayBound: cfg.queueReplay}

	ha := newTally(in.results())
	shared := t.TempDir() // the ReadWriteMany volume
	a := newReplica(t, cfg, kubeconfig, shared, "a", lease, ha.sink(t, 0).URL)
	b := newReplica(t, cfg, kubeconfig, shared, "b", lease, ha.sink(t, 1).URL)
	samplers := [2]*procsample.Sampler{}
	for i, r := range []*replica{a, b} {
		samplers[i] = procsample.Start(fmt.Sprintf("handover-%s-%s", sc.Name, r.name),
			fmt.Sprintf("handover: %d reports, replica %s", in.reports, r.name), r.pid, r.metricsURL(),
			procsample.Options{Interval: 250 * time.Millisecond, Counter: "otelcol_exporter_sent_log_records",
				Gauges: []string{"otelcol_exporter_queue_size"}})
	}
	var marks []procsample.Mark
	mark := func(name string) { marks = append(marks, procsample.Mark{Name: name, T: samplers[0].Elapsed()}) }

	a.start(t)
	a.c().WaitOutput(startedLeading, time.Minute)
	b.start(t)
	// The kill follows the receiver's progress, not the exporter's: the receiver hands records to the persistent
	// queue faster than the exporter drains it, and at the small scale it would be done before the exporter sent
	// a third, leaving the new leader nothing of the sync to take over.
	killAt := float64(in.results() * sc.KillAtPercent / 100)
	a.waitFor(t, 5*time.Minute, "otelcol_receiver_k8s_reports_results", "", func(v float64) bool { return v >= killAt })
	a.kill(t)
	killed := a.stopped
	mark("A killed")
	atKill, err := ha.delivered(want.keys)
	require.NoError(t, err)
	res.AtKill = atKill.PerReplica[0]
	require.Less(t, res.AtKill, in.results(), "A was killed before it had exported everything")

	b.healthy()
	b.c().WaitOutput(startedLeading, time.Minute)
	res.LeaseTakeoverS = seconds(time.Since(killed))
	mark("B leads")
	// B has finished once its receiver holds every report as emitted and its queue is empty: what B emitted was
	// accepted by the pipeline (and counted by policy_aggregate and policy_metrics) before it was recorded.
	b.waitFor(t, 5*time.Minute, "otelcol_receiver_k8s_reports_reports", "", func(v float64) bool { return v == float64(in.reports) })
	b.waitDrained(t, time.Minute)
	res.BFinishedS = seconds(time.Since(killed))
	res.BEmitted = int(b.counter(t, "otelcol_receiver_k8s_reports_results", `state="new"`))
	res.ARecorded = in.results() - res.BEmitted
	mark("B finished")

	// A comes back on its own queue, as the StatefulSet restarts the Pod with its claim: a follower now, it sends
	// what it had accepted before the kill.
	a.start(t)
	a.healthy()
	a.waitDrained(t, time.Minute)
	res.ARestartDrainS = seconds(time.Since(a.started))
	mark("A drained")
	assert.NotContains(t, a.c().Output(), startedLeading, "the restarted A follows")

	// B's receiver is idle and both queues are empty: every result that will ever arrive has arrived.
	got, err := ha.delivered(want.keys)
	require.NoError(t, err, "every record the sinks received is readable")
	res.delivered = got
	res.AfterRestart = got.PerReplica[0] - atKill.PerReplica[0]
	res.BFirstExportS = seconds(got.first[1].Sub(killed))
	if !got.complete.IsZero() {
		res.AllExportedS = seconds(got.complete.Sub(killed))
	}
	res.SummaryRecords = ha.summaryRecordCount()

	// The leader emits summaries and gauges every second; they settle to the counts of the input.
	res.SummariesMatchInput, res.GaugesMatchInput = settle(ha, want)
	changes := ha.changesAddUp()
	res.ChangesAddUp = changes == ""

	for i, s := range samplers {
		series := s.Stop()
		series.Marks = marks
		res.PeakRSSMB = max(res.PeakRSSMB, series.PeakRSSMB)
		require.NoError(t, series.Write(procsample.ResultsDir()), "series of replica %d", i)
	}
	a.c().Stop()
	b.c().Stop()

	ref := reference(t, cfg, kubeconfig, in, want)
	res.ReferenceSyncS = ref.syncS
	res.ReferenceSummaryRecords = ref.summaryRecords
	final, err := ha.delivered(want.keys)
	require.NoError(t, err)
	res.SummariesMatchUninterrupted = diff("summaries", final.summaries, ref.summaries) == ""
	res.GaugesMatchUninterrupted = diff("gauges", final.gauges, ref.gauges) == ""
	res.WallS = seconds(time.Since(began))
	res.Date = time.Now().UTC().Format(time.DateOnly)
	res.write(t)

	assert.Zero(t, got.Missing, "every result arrived; some missing: %v", got.someMissing)
	assert.Zero(t, got.Foreign, "no result of no report")
	assert.Equal(t, map[string]int{"new": got.Records}, got.States, "every record is a new result")
	assert.Positive(t, res.BEmitted, "B emitted what A had not: the handover was mid-sync")
	assert.LessOrEqual(t, got.Reemitted, res.ReemitBound, "B re-emitted only what A's receiver had in flight")
	assert.LessOrEqual(t, got.Replayed[0], res.ReplayBound, "A's queue sent again only what it was exporting")
	assert.Zero(t, got.Replayed[1], "B was never restarted")
	if changes != "" {
		t.Logf("the summary changes do not add up to the final counts (a summary A emitted but had not recorded as emitted when it was killed, emitted again by B): %s", changes)
	}
	assert.Empty(t, diff("summaries", final.summaries, want.summaries))
	assert.Empty(t, diff("gauges", final.gauges, want.gauges))
	assert.Empty(t, diff("summaries against the uninterrupted replica's", final.summaries, ref.summaries))
	assert.Empty(t, diff("gauges against the uninterrupted replica's", final.gauges, ref.gauges))
}

// settleTimeout is how long the summaries and gauges may take to reach their final counts after the last
// result was counted: a few of their one-second intervals, on a loaded machine.
const settleTimeout = 30 * time.Second

// settle waits until the latest summaries and gauges equal the expected ones, and says which did: a double
// count never settles, and is then reported rather than waited for forever.
func settle(tl *tally, want expected) (summaries, gauges bool) {
	deadline := time.Now().Add(settleTimeout)
	for {
		s, g := tl.latest()
		summaries = diff("", s, want.summaries) == ""
		gauges = diff("", g, want.gauges) == ""
		if summaries && gauges || time.Now().After(deadline) {
			return summaries, gauges
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// uninterrupted is what one replica that leads throughout emits for the same reports.
type uninterrupted struct {
	syncS          float64
	summaryRecords int
	summaries      map[string]policyresult.Counts
	gauges         map[string]int64
}

// reference runs the config once more as a single replica, on a state directory and Lease of its own, with
// the same reports: the run the handover must be indistinguishable from.
func reference(t *testing.T, cfg statefulSetConfig, kubeconfig string, in input, want expected) uninterrupted {
	tl := newTally(in.results())
	r := newReplica(t, cfg, kubeconfig, t.TempDir(), "reference", referenceLease, tl.sink(t, 0).URL)
	r.start(t)
	r.c().WaitOutput(startedLeading, time.Minute)
	r.waitFor(t, 5*time.Minute, "otelcol_receiver_k8s_reports_reports", "", func(v float64) bool { return v == float64(in.reports) })
	r.waitDrained(t, time.Minute)
	u := uninterrupted{syncS: seconds(time.Since(r.started))}
	settle(tl, want)
	r.c().Stop()
	d, err := tl.delivered(want.keys)
	require.NoError(t, err)
	require.Zero(t, d.Missing, "the uninterrupted replica exported every result")
	require.Zero(t, d.Duplicates, "the uninterrupted replica exported every result once")
	require.Empty(t, tl.changesAddUp())
	u.summaryRecords, u.summaries, u.gauges = tl.summaryRecordCount(), d.summaries, d.gauges
	return u
}
