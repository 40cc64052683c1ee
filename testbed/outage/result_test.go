// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package outage

import (
	"time"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// result is what a run reports (t.Logf, and $TESTBED_RESULTS_DIR/outage-<destination>-<scale>.json).
type result struct {
	Destination string `json:"destination"`
	scale
	OutageS float64 `json:"outage_s"`
	Date    string  `json:"date"`
	arrivals.Tally
	DuplicatesVisible bool              `json:"duplicates_visible"` // false: the store keeps one row per id
	QueueCapacity     int64             `json:"queue_capacity_bytes"`
	PeakQueue         int64             `json:"peak_queue_bytes"`
	QueueFullS        float64           `json:"queue_full_after_s"`   // from down to the queue at 90 % of its bound; -1 if never
	FirstPushBackS    float64           `json:"first_push_back_s"`    // from down to the first 503; -1 if none
	QueueEmptyS       float64           `json:"queue_empty_after_s"`  // from up to the first sample of an empty queue; -1 if none
	CatchUpS          float64           `json:"caught_up_after_s"`    // from up to the client having no backlog; -1 if never
	DrainS            float64           `json:"all_arrived_after_s"`  // from up to every accepted item arrived
	PeakDiskMB        float64           `json:"peak_storage_disk_mb"` // the file_storage directory
	DiskBoundMB       float64           `json:"storage_disk_bound_mb"`
	PeakRSSMB         float64           `json:"peak_rss_mb"`
	WallS             float64           `json:"wall_s"`
	Client            loadclient.Stats  `json:"client"`
	Marks             []procsample.Mark `json:"marks"`
	Samples           []sample          `json:"samples"`
}

func summarize(d *destination, sc scale, tl timeline, client *loadclient.Client, tally arrivals.Tally, began time.Time) result {
	down, up := tl.at("down"), tl.at("up")
	res := result{
		Destination: d.name, scale: sc, OutageS: sc.Outage.Seconds(), Date: time.Now().UTC().Format(time.DateOnly),
		Tally: tally, DuplicatesVisible: d.duplicatesVisible, QueueCapacity: -1,
		QueueFullS: -1, FirstPushBackS: -1, QueueEmptyS: -1, CatchUpS: -1, DrainS: round(tl.at("all arrived") - up),
		DiskBoundMB: diskBoundMB(sc.QueueBytes), PeakRSSMB: tl.Collector.PeakRSSMB,
		WallS: round(time.Since(began).Seconds()), Client: client.Stats(), Marks: tl.Collector.Marks, Samples: tl.Samples,
	}
	for _, s := range tl.Collector.Samples {
		if s.NoMetrics {
			continue
		}
		q := s.Gauges[queueSize]
		res.QueueCapacity = max(res.QueueCapacity, int64(s.Gauges[queueCapacity]))
		res.PeakQueue = max(res.PeakQueue, int64(q))
		if res.QueueFullS < 0 && s.T >= down && q >= 0.9*float64(sc.QueueBytes) {
			res.QueueFullS = round(s.T - down)
		}
		if res.QueueEmptyS < 0 && s.T > up && q == 0 {
			res.QueueEmptyS = round(s.T - up)
		}
	}
	for _, s := range tl.Samples {
		res.PeakDiskMB = max(res.PeakDiskMB, round(s.DiskMB))
		// The client generates at a fixed rate from the observer's start; it has caught up when no more than two
		// uploads wait (one being generated, one in flight).
		due := min(float64(client.Generated()), float64(sc.Rate)*s.T)
		if res.CatchUpS < 0 && s.T > up && float64(s.Accepted) >= due-float64(2*sc.ChunkSize) {
			res.CatchUpS = round(s.T - up)
		}
	}
	if first := client.First503(); !first.IsZero() {
		downAt := tl.Start.Add(time.Duration(down * float64(time.Second)))
		res.FirstPushBackS = round(first.Sub(downAt).Seconds())
	}
	return res
}
