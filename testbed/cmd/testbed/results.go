// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// results is everything one run of the suite produced: written as results.json, and what RESULTS.md and the
// plot are made from (so that both can be made again from results.json alone).
type results struct {
	Date     string   `json:"date"` // when the suite started, UTC
	Machine  machine  `json:"machine"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
	WallS    float64  `json:"wall_s"`
	// Only lists the steps of a partial run (-only); empty when everything ran.
	Only       []string            `json:"only,omitempty"`
	Delivery   []deliveryResult    `json:"delivery"`
	Tables     []tableResult       `json:"tables"`
	Steps      []stepRun           `json:"bench_steps"`
	Benchmarks []benchLine         `json:"benchmarks"` // every result line, as parsed
	Series     []procsample.Series `json:"series"`
}

type tableResult struct {
	Title    string      `json:"title"`
	About    string      `json:"about"`
	Commands []string    `json:"commands"`
	Rows     []figureRow `json:"rows"`
}

type figureRow struct {
	What     string   `json:"what"`
	Step     string   `json:"step"`
	Bench    string   `json:"benchmark"`
	Measures []figure `json:"measures"`
}

// figure is one measure of one row over the runs.
type figure struct {
	Label string `json:"label"`
	summary
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"target_met,omitempty"`
}

// evaluate takes each figure of the tables from the benchmark lines of the steps that ran (steps not run leave
// their rows out); a figure with fewer than `want` runs is a failure: the suite promises every figure.
func evaluate(tables []table, lines []benchLine, ran map[string]benchStep, want int) ([]tableResult, []string) {
	var out []tableResult
	var failures []string
	for _, t := range tables {
		tr := tableResult{Title: t.Title, About: t.About}
		seen := map[string]bool{}
		for _, r := range t.Rows {
			step, ok := ran[r.Step]
			if !ok {
				continue
			}
			if !seen[r.Step] {
				seen[r.Step] = true
				tr.Commands = append(tr.Commands, step.command())
			}
			fr := figureRow{What: r.What, Step: r.Step, Bench: r.Bench}
			for _, m := range r.Measures {
				f := figure{Label: m.label()}
				var values []float64
				for _, l := range lines {
					if l.Step != r.Step || l.Name != r.Bench {
						continue
					}
					if v, ok := m.value(l.Metrics); ok {
						values = append(values, v)
					}
				}
				f.summary = summarize(values)
				promised := want
				if step.Runs > 0 {
					promised = step.Runs
				}
				if len(values) < promised {
					failures = append(failures, fmt.Sprintf("%s: %s, %s: %d of %d runs measured", t.Title, r.What, f.Label, len(values), promised))
				}
				if m.Target != nil && len(values) > 0 {
					met := m.Target.met(f.summary)
					f.Target, f.Met = fmt.Sprintf("%s (%s)", m.Target.Text, m.Target.Stat), &met
				}
				fr.Measures = append(fr.Measures, f)
			}
			tr.Rows = append(tr.Rows, fr)
		}
		if len(tr.Rows) > 0 {
			out = append(out, tr)
		}
	}
	return out, failures
}

func (m measure) label() string {
	if m.Label != "" {
		return m.Label
	}
	return m.Unit
}

// value is the measure in one run, false when the run did not report it.
func (m measure) value(metrics map[string]float64) (float64, bool) {
	scale := m.Scale
	if scale == 0 {
		scale = 1
	}
	if m.Derive != nil {
		v, ok := m.Derive(metrics)
		return v * scale, ok
	}
	v, ok := metrics[m.Unit]
	return v * scale, ok
}
