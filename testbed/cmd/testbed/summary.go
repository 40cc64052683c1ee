// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// deliveryRow is one delivery run's promise in one line: what was accepted, what arrived, what was lost or
// duplicated, and the figures that say how the scenario went. The full fields follow per package.
type deliveryRow struct {
	Run, Accepted, Arrived, Lost, Duplicates, PeakRSS, Figures string
}

// summaryRows reads the result files of every delivery package.
func summaryRows(ds []deliveryResult) []deliveryRow {
	var rows []deliveryRow
	for _, d := range ds {
		// The attacks have a table of their own (writeHostile).
		_, files := splitHostile(d.Files)
		for _, f := range files {
			var m map[string]any
			if err := json.Unmarshal(f.Data, &m); err != nil {
				rows = append(rows, deliveryRow{Run: strings.TrimSuffix(f.Name, ".json"), Figures: "unreadable: " + err.Error()})
				continue
			}
			rows = append(rows, summaryRow(strings.TrimSuffix(f.Name, ".json"), m))
		}
	}
	return rows
}

func summaryRow(name string, m map[string]any) deliveryRow {
	r := deliveryRow{Run: name, Accepted: "–", Arrived: "–", Lost: "–", Duplicates: "–", PeakRSS: "–"}
	f := func(key string) (float64, bool) { v, ok := m[key].(float64); return v, ok }
	if v, ok := f("accepted"); ok {
		r.Accepted = exact(v)
		lost := 0
		if l, ok := m["lost"].([]any); ok {
			lost = len(l)
		}
		r.Lost = fmt.Sprint(lost)
	}
	if v, ok := f("distinct_ids"); ok {
		r.Arrived = exact(v)
	}
	if v, ok := f("duplicate_lines"); ok {
		r.Duplicates = exact(v)
		if visible, ok := m["duplicates_visible"].(bool); ok && !visible {
			r.Duplicates = "not visible (one row per key)"
		}
	}
	// The report watcher's restart: expected records against what came, and anything beyond them.
	if want, ok := f("expected"); ok {
		got, _ := f("records_after_restart")
		extra, _ := f("unexpected")
		r.Accepted, r.Arrived = exact(want)+" expected", exact(got)
		r.Lost, r.Duplicates = exact(max(want-(got-extra), 0)), exact(extra)+" unexpected"
	}
	// The leader's handover: every result of the reports, and the duplicates by cause against their bounds.
	if want, ok := f("results"); ok {
		got, _ := f("distinct_results")
		missing, _ := f("missing")
		r.Accepted, r.Arrived, r.Lost = exact(want)+" results", exact(got), exact(missing)
		reemitted, _ := f("duplicates_reemitted")
		reemitBound, _ := f("duplicates_reemitted_bound")
		replayed := 0.0
		if rs, ok := m["duplicates_replayed"].([]any); ok {
			for _, x := range rs {
				v, _ := x.(float64)
				replayed += v
			}
		}
		replayBound, _ := f("duplicates_replayed_bound")
		r.Duplicates = fmt.Sprintf("%s re-emitted (≤ %s), %s replayed (≤ %s)", exact(reemitted), exact(reemitBound),
			exact(replayed), exact(replayBound))
	}
	if v, ok := f("peak_rss_mb"); ok {
		r.PeakRSS = num(v) + " MB"
	}

	var figs []string
	add := func(format string, args ...any) { figs = append(figs, fmt.Sprintf(format, args...)) }
	if kills, ok := f("kills"); ok {
		slowest := 0.0
		if rs, ok := m["restart_s"].([]any); ok {
			for _, x := range rs {
				if v, ok := x.(float64); ok {
					slowest = max(slowest, v)
				}
			}
		}
		add("%s SIGKILLs, healthy again within %s s", exact(kills), num(slowest))
	}
	if v, ok := f("outage_s"); ok {
		add("%s s outage", num(v))
	}
	if v, ok := f("queue_full_after_s"); ok && v >= 0 {
		add("queue full %s s into it", num(v))
	}
	if v, ok := f("first_push_back_s"); ok && v >= 0 {
		add("first 503 at %s s", num(v))
	}
	if c, ok := m["client"].(map[string]any); ok {
		if v, ok := c["status_503"].(float64); ok && v > 0 {
			add("%s uploads refused with 503 and retried", exact(v))
		}
	}
	if v, ok := f("receiver_refused_records"); ok {
		add("%s decisions refused with 503 and uploaded again by OPA", exact(v))
	}
	if peak, ok := f("peak_queue_bytes"); ok {
		if capacity, ok := f("queue_capacity_bytes"); ok && capacity > 0 {
			add("queue peak %s %% of its %s MiB bound", num(100*peak/capacity), num(capacity/(1<<20)))
		}
	}
	if v, ok := f("peak_storage_disk_mb"); ok {
		add("storage on disk ≤ %s MB", num(v))
	}
	if v, ok := f("caught_up_after_s"); ok && v >= 0 {
		add("client caught up %s s after the recovery", num(v))
	}
	if v, ok := f("a_exported_at_kill"); ok {
		if total, _ := f("results"); total > 0 {
			add("leader SIGKILLed with %s %% exported", num(100*v/total))
		}
	}
	for _, t := range times {
		if v, ok := f(t.key); ok {
			add(t.format, num(v))
		}
	}
	if s, ok := m["summaries_match_uninterrupted"].(bool); ok {
		if g, _ := m["gauges_match_uninterrupted"].(bool); s && g {
			add("summaries and gauges equal to an uninterrupted run's")
		} else {
			add("summaries %s, gauges %s an uninterrupted run's", equalTo(s), equalTo(g))
		}
	}
	r.Figures = strings.Join(figs, "; ")
	return r
}

// times are the figures in seconds that read the same in every run that has them, in the order shown.
var times = []struct{ key, format string }{
	{"all_arrived_after_s", "all arrived %s s after it"},
	{"drain_s", "all stored %s s after the stream"},
	{"expected_after_s", "all expected records %s s after the start"},
	{"b_leads_s", "the other leads %s s after the kill"},
	{"b_first_export_s", "exports %s s after it"},
	{"all_exported_s", "every result exported %s s after it"},
}

func equalTo(equal bool) string {
	if equal {
		return "equal to"
	}
	return "**differ** from"
}

// exact formats a number of things exactly (num keeps three significant figures, right for rates only).
func exact(v float64) string { return thousands(fmt.Sprintf("%.0f", v)) }

func writeDeliverySummary(b *bytes.Buffer, ds []deliveryResult) {
	rows := summaryRows(ds)
	if len(rows) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("### Summary\n\n")
	p("| run | accepted | arrived | lost | duplicates | peak RSS | how it went |\n")
	p("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		p("| %s | %s | %s | %s | %s | %s | %s |\n", r.Run, r.Accepted, r.Arrived, r.Lost, r.Duplicates, r.PeakRSS, r.Figures)
	}
	p("\n")
}
