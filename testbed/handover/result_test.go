// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package handover

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// result is what a run reports (t.Logf, and $TESTBED_RESULTS_DIR/handover-<scale>.json when set). Times are in
// seconds from the SIGKILL of the leader, A, unless named otherwise.
type result struct {
	scale
	Results int `json:"results"` // reports × 19, each to arrive at least once
	delivered
	// AtKill is how many result records A had exported when it was killed; BEmitted how many B's receiver
	// emitted after it took over, so A's receiver had recorded ARecorded = Results − BEmitted as emitted;
	// AfterRestart how many A's queue sent after its restart.
	AtKill       int `json:"a_exported_at_kill"`
	ARecorded    int `json:"a_recorded_as_emitted"`
	BEmitted     int `json:"b_emitted"`
	AfterRestart int `json:"a_sent_after_restart"`
	// The bounds on the duplicates (see README.md): what A's receiver had accepted but not yet recorded, and what
	// A's queue was exporting.
	ReemitBound int `json:"duplicates_reemitted_bound"`
	ReplayBound int `json:"duplicates_replayed_bound"`

	LeaseTakeoverS float64 `json:"b_leads_s"`
	BFirstExportS  float64 `json:"b_first_export_s"`
	BFinishedS     float64 `json:"b_finished_s"`
	AllExportedS   float64 `json:"all_exported_s"`
	ARestartDrainS float64 `json:"a_restart_to_drained_s"`

	SummaryRecords          int     `json:"summary_records"`
	ReferenceSummaryRecords int     `json:"reference_summary_records"`
	ReferenceSyncS          float64 `json:"reference_sync_s"`
	// ChangesAddUp: each group's summary changes add up to its final counts (see README.md).
	ChangesAddUp                bool `json:"summary_changes_add_up"`
	SummariesMatchInput         bool `json:"summaries_match_input"`
	GaugesMatchInput            bool `json:"gauges_match_input"`
	SummariesMatchUninterrupted bool `json:"summaries_match_uninterrupted"`
	GaugesMatchUninterrupted    bool `json:"gauges_match_uninterrupted"`

	PeakRSSMB float64 `json:"peak_rss_mb"` // the largest of the replicas' processes
	WallS     float64 `json:"wall_s"`
	Date      string  `json:"date"`
}

func (r result) write(t *testing.T) {
	t.Logf("%s: %d reports, %d results; A killed after exporting %d (%.0f %%; its receiver had recorded %d as emitted), B led %.2f s after the kill, "+
		"exported first %.2f s and finished %.2f s after it; A's queue sent %d after its restart; "+
		"every result exported %.2f s after the kill; %d duplicates (%d re-emitted by B, bound %d; %d replayed "+
		"by A's queue, bound %d); summaries and gauges equal to the input's %v/%v and to an uninterrupted run's "+
		"%v/%v (%d summary records, uninterrupted %d); peak RSS %.0f MB",
		r.Name, r.Reports, r.Results, r.AtKill, 100*float64(r.AtKill)/float64(r.Results), r.ARecorded, r.LeaseTakeoverS,
		r.BFirstExportS, r.BFinishedS, r.AfterRestart, r.AllExportedS, r.Duplicates, r.Reemitted, r.ReemitBound,
		r.Replayed[0], r.ReplayBound, r.SummariesMatchInput, r.GaugesMatchInput, r.SummariesMatchUninterrupted,
		r.GaugesMatchUninterrupted, r.SummaryRecords, r.ReferenceSummaryRecords, r.PeakRSSMB)
	path, err := procsample.WriteResult("handover-"+r.Name, r)
	require.NoError(t, err)
	if path != "" {
		t.Logf("wrote %s", path)
	}
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*100) / 100 }
