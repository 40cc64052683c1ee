// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// writeMarkdown writes RESULTS.md from the results and the figures measured by hand.
func writeMarkdown(w io.Writer, r results, plotFile string, byHand []handTable) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Testbed results\n\n")
	p("Written by `make testbed` (the runner in [`testbed/cmd/testbed`](../cmd/testbed/)); do not edit: run it again. ")
	p("What the numbers mean, and how they were reached: [README.md](README.md). Everything below, each run's values ")
	p("and the time series as well, is in [results.json](results.json)")
	if len(byHand) > 0 {
		p(", but the section [Measured by hand](#measured-by-hand), which is from [by-hand.yaml](by-hand.yaml)")
	}
	p(".\n\n")
	if len(r.Only) > 0 {
		p("**Partial run**: only %s.\n\n", strings.Join(r.Only, ", "))
	}
	if r.Passed {
		p("**Every test passed and every figure was measured.**\n\n")
	} else {
		p("**FAILED:**\n\n")
		for _, f := range r.Failures {
			p("- %s\n", f)
		}
		p("\n")
	}

	m := r.Machine
	p("## Machine\n\n")
	p("| date (UTC) | cores | memory | CPU | kernel | OS | Go | load average at the start | suite wall time |\n")
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	p("| %s | %d | %.1f GiB | %s | %s | %s | %s | %s | %s |\n\n", r.Date, m.Cores, m.MemoryGiB, m.CPU, m.Kernel, m.OS, m.Go,
		m.Load, duration(r.WallS))
	p("Every load generator, server and database of the benchmarks runs on the same cores as what it measures.\n\n")

	if len(r.Delivery) > 0 {
		p("## Delivery tests (`TESTBED_SCALE=full`)\n\n")
		writeDeliverySummary(&b, r.Delivery)
		for _, d := range r.Delivery {
			writeDelivery(&b, d)
		}
	}

	if len(r.Tables) > 0 {
		p("## Benchmarks\n\n")
		p("Each figure: min / median / max over the runs, each run a separate benchmark result (`-count`, or a ")
		p("run of its own inside the benchmark for `k8s_reports`). A target is checked against the statistic named ")
		p("next to it.\n\n")
		for _, t := range r.Tables {
			writeTable(&b, t)
		}
	}

	if len(r.Series) > 0 {
		p("## Memory and throughput over time\n\n")
		if plotFile != "" {
			p("![Throughput, resident memory and queue size over time, one row per run](%s)\n\n", plotFile)
		}
		p("Sampled from the collector process (`/proc/<pid>/status`) and its Prometheus self-metrics ")
		p("(testbed/internal/procsample). Peak RSS is the largest `VmHWM` of the run's collector processes, so it ")
		p("includes peaks between samples. Counted is the counter's increase the samples saw: what a killed ")
		p("process counted after its last sample is not in it.\n\n")
		p("| run | duration | samples | peak RSS | throughput counter | counted | collector restarts |\n")
		p("| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, s := range r.Series {
			dur := 0.0
			if n := len(s.Samples); n > 0 {
				dur = s.Samples[n-1].T
			}
			counter := s.Counter
			if counter != "" {
				counter = "`" + counter + "`"
			}
			p("| %s | %s | %d | %s MB | %s | %s | %d |\n", s.Title, duration(dur), len(s.Samples), num(s.PeakRSSMB),
				counter, num(s.CounterTotal), s.Restarts)
		}
		p("\n")
	}
	writeByHand(&b, byHand)
	_, err := w.Write(b.Bytes())
	return err
}

func writeDelivery(b *bytes.Buffer, d deliveryResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if !d.Present {
		p("### %s: not in this tree\n\n`testbed/%s` has no tests yet; nothing ran.\n\n", d.Package, d.Package)
		return
	}
	status := "passed"
	if !d.Passed {
		status = "**FAILED**"
	}
	p("### %s: %s", d.Package, status)
	if d.Run != nil {
		p(" (%s)\n\n`%s`\n\n", duration(d.Run.Seconds), d.Run.Command)
	} else {
		p("\n\n")
	}
	if len(d.Tests) > 0 {
		p("| test | outcome | time |\n| --- | --- | --- |\n")
		for _, t := range d.Tests {
			if strings.Contains(t.Name, "/") && t.Outcome == "pass" {
				continue // subtests show up when they fail; their logs are below
			}
			p("| `%s` | %s | %s |\n", t.Name, t.Outcome, duration(t.Seconds))
		}
		p("\n")
	}
	attacks, files := splitHostile(d.Files)
	if len(attacks) > 0 {
		writeHostile(b, attacks)
	}
	for _, f := range files {
		p("Results in `%s`:\n\n| field | value |\n| --- | --- |\n", f.Name)
		for _, kv := range flatten(f.Data) {
			p("| %s | %s |\n", kv[0], kv[1])
		}
		p("\n")
	}
	var logged []testOutcome
	for _, t := range d.Tests {
		if len(t.Log) > 0 {
			logged = append(logged, t)
		}
	}
	if len(logged) > 0 {
		p("<details><summary>What the tests logged</summary>\n\n```\n")
		for _, t := range logged {
			p("%s\n", t.Name)
			for _, l := range t.Log {
				p("    %s\n", l)
			}
		}
		p("```\n\n</details>\n\n")
	}
}

func writeTable(b *bytes.Buffer, t tableResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("### %s\n\n%s\n\n", t.Title, t.About)
	for _, c := range t.Commands {
		p("- `%s`\n", c)
	}
	p("\n| what | measure | min | median | max | runs | target |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range t.Rows {
		for i, f := range r.Measures {
			what := r.What
			if i > 0 {
				what = ""
			}
			target := ""
			if f.Met != nil {
				target = f.Target + ": met"
				if !*f.Met {
					target = f.Target + ": **not met**"
				}
			}
			if f.Runs == 0 {
				p("| %s | %s | **missing** | | | 0 | %s |\n", what, f.Label, target)
				continue
			}
			v := nums(f.Median, f.Min, f.Median, f.Max)
			p("| %s | %s | %s | %s | %s | %d | %s |\n", what, f.Label, v[0], v[1], v[2], f.Runs, target)
		}
	}
	p("\n")
}

// flatten lists a JSON object's fields as (path, value) in key order, nested objects as a.b, arrays of
// scalars on one line.
func flatten(data json.RawMessage) [][2]string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return [][2]string{{"(unreadable)", err.Error()}}
	}
	var out [][2]string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				name := k
				if prefix != "" {
					name = prefix + "." + k
				}
				walk(name, x[k])
			}
		case []any:
			out = append(out, [2]string{prefix, list(x)})
		default:
			out = append(out, [2]string{prefix, scalar(x)})
		}
	}
	walk("", v)
	return out
}

// list shows an array in one cell: scalars joined, marks as "name at t s", a few objects as JSON; a long
// array of objects (a test's own samples) only by its length, as RESULTS.md would drown in it.
func list(x []any) string {
	parts := make([]string, 0, len(x))
	objects := 0
	for _, e := range x {
		m, ok := e.(map[string]any)
		if !ok {
			parts = append(parts, scalar(e))
			continue
		}
		objects++
		if name, ok := m["name"].(string); ok && len(m) == 2 && m["t_s"] != nil {
			parts = append(parts, fmt.Sprintf("%s at %s s", name, scalar(m["t_s"])))
			continue
		}
		parts = append(parts, scalar(m))
	}
	if objects > 5 && len(parts) > 0 && !strings.Contains(parts[0], " at ") {
		return fmt.Sprintf("%d entries (in results.json)", len(x))
	}
	return strings.Join(parts, ", ")
}

func scalar(v any) string {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			if strings.ContainsAny(x.String(), ".eE") {
				return num(f)
			}
			return thousands(x.String())
		}
		return x.String()
	case string:
		return x
	case nil:
		return "null"
	case bool:
		return fmt.Sprint(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// utcDate is how RESULTS.md dates a run.
func utcDate(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }
