// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// testTables are two tables over testdata/bench.txt: one figure with its three runs, one with two (a failure),
// one with a target, one never measured.
var testTables = []table{
	{Title: "Exporter", About: "Batches into the exporter.", Rows: []row{
		{"`durable_file`, fsync", "durablefile", "BenchmarkConsumeLogs/sync", []measure{perSecond, allocations}},
		{"`durable_file`, no fsync", "durablefile", "BenchmarkConsumeLogs/nosync", []measure{perSecond}},
	}},
	{Title: "Reports", About: "The binary.", Rows: []row{
		{"persistent", "k8sreports", "BenchmarkK8sReports/persistent", []measure{
			{Unit: "sync-s", Label: "sync (s)", Target: &target{Text: "≤ 30 s", Stat: "max", Limit: 30, AtMost: true}},
			{Unit: "peak-rss-MB", Label: "peak RSS (MB)", Target: &target{Text: "≤ 200 MB", Stat: "max", Limit: 200, AtMost: true}},
			{Label: "sync per burst", Derive: ratio("sync-s", "burst-s")},
		}},
		{"never run", "k8sreports", "BenchmarkK8sReports/memory", []measure{{Unit: "sync-s"}}},
	}},
	{Title: "Not run", Rows: []row{{"s3", "s3", "BenchmarkS3Export/s3/gzip", []measure{perSecond}}}},
}

func testResults(t *testing.T) results {
	t.Helper()
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := parseBench(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lines {
		lines[i].Step = map[bool]string{true: "k8sreports", false: "durablefile"}[strings.HasSuffix(lines[i].Pkg, "k8sreports")]
	}
	ran := map[string]benchStep{
		"durablefile": {Name: "durablefile", Pkg: "./exporter/durablefileexporter/", Bench: "^BenchmarkConsumeLogs$", Args: count},
		"k8sreports":  {Name: "k8sreports", Pkg: "./testbed/k8sreports/", Bench: "^BenchmarkK8sReports$", Env: []string{"BENCH_RUNS=2"}},
	}
	tables, failures := evaluate(testTables, lines, ran, 3)
	files, err := readResultFiles("testdata/scratch", "crash")
	if err != nil {
		t.Fatal(err)
	}
	series, err := readAllSeries("testdata/scratch/series")
	if err != nil {
		t.Fatal(err)
	}
	pass := readTestJSON(t, "testdata/test_pass.json")
	return results{
		Date: "2026-11-22 16:00 UTC", Machine: machine{Cores: 2, MemoryGiB: 23.4, CPU: "AMD EPYC", Kernel: "6.1.0", OS: "linux/amd64", Go: "go1.26.8", Load: "0.10 0.20 0.30"},
		Passed: len(failures) == 0, Failures: failures, WallS: 1500,
		Delivery: []deliveryResult{
			{Package: "crash", Present: true, Passed: true, Run: &stepRun{Name: "crash", Command: "TESTBED_SCALE=full go test ./testbed/crash/", Seconds: 151}, Tests: pass.outcomes(), Files: files},
			{Package: "outage"},
		},
		Tables: tables, Benchmarks: lines, Series: series,
	}
}

func TestEvaluate(t *testing.T) {
	r := testResults(t)
	if len(r.Tables) != 2 {
		t.Fatalf("%d tables, want 2 (the table of a step that did not run is left out)", len(r.Tables))
	}
	sync := r.Tables[0].Rows[0].Measures[0]
	if sync.Min != 340000 || sync.Median != 357000 || sync.Max != 360000 || sync.Runs != 3 {
		t.Fatalf("fsync records/s %+v", sync)
	}
	if allocs := r.Tables[0].Rows[0].Measures[1]; allocs.Median != 12 || allocs.Label != "allocations per op" {
		t.Fatalf("allocations %+v", allocs)
	}
	k := r.Tables[1].Rows[0].Measures
	if k[0].Min != 9.3 || k[0].Max != 10 || k[0].Met == nil || !*k[0].Met {
		t.Fatalf("sync %+v", k[0])
	}
	if k[1].Met == nil || *k[1].Met {
		t.Fatalf("peak RSS of 257 MB met a 200 MB target: %+v", k[1])
	}
	if k[2].Runs != 2 || k[2].Min != 9.3/5.2 {
		t.Fatalf("derived %+v", k[2])
	}
	want := []string{
		"Exporter: `durable_file`, no fsync, records/s: 2 of 3 runs measured",
		"Reports: persistent, sync (s): 2 of 3 runs measured",
		"Reports: persistent, peak RSS (MB): 2 of 3 runs measured",
		"Reports: persistent, sync per burst: 2 of 3 runs measured",
		"Reports: never run, sync-s: 0 of 3 runs measured",
	}
	if strings.Join(r.Failures, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failures\n%s\nwant\n%s", strings.Join(r.Failures, "\n"), strings.Join(want, "\n"))
	}
	if got := r.Tables[1].Commands; len(got) != 1 || got[0] != "BENCH_RUNS=2 go test -run '^$' -bench '^BenchmarkK8sReports$' -timeout 0m ./testbed/k8sreports/" {
		t.Fatalf("commands %q", got)
	}
}

func TestWriteMarkdown(t *testing.T) {
	r := testResults(t)
	var b bytes.Buffer
	if err := writeMarkdown(&b, r, "timeseries.png", nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"**FAILED:**\n\n- Exporter: `durable_file`, no fsync, records/s: 2 of 3 runs measured\n",
		"| 2026-11-22 16:00 UTC | 2 | 23.4 GiB | AMD EPYC | 6.1.0 | linux/amd64 | go1.26.8 | 0.10 0.20 0.30 | 25 min 0 s |",
		"### crash: passed (2 min 31 s)\n\n`TESTBED_SCALE=full go test ./testbed/crash/`",
		"| `TestCrash` | pass | 0.0 s |",
		"Results in `crash-full.json`:",
		"| accepted | 120,000 |",
		"| client.conn_refused | 30 |",
		"| duplicate_rate | 0.0001 |",
		"| restart_s | 0.11, 0.2, 0.15, 0.13, 0.22, 0.12 |",
		"| marks | down at 15.0 s, up at 135 s |",
		"| samples | 7 entries (in results.json) |",
		"| few | {\"a\":1} |",
		"    t_test.go:4: accepted 120000, stored 120000\n",
		"### outage: not in this tree",
		"- `go test -run '^$' -bench '^BenchmarkConsumeLogs$' -count 3 -timeout 0m ./exporter/durablefileexporter/`",
		"| `durable_file`, fsync | records/s | 340,000 | 357,000 | 360,000 | 3 |  |",
		"|  | allocations per op | 12 | 12 | 12 | 3 |  |",
		"| persistent | sync (s) | 9.30 | 9.65 | 10.00 | 2 | ≤ 30 s (max): met |",
		"|  | peak RSS (MB) | 250 | 254 | 257 | 2 | ≤ 200 MB (max): **not met** |",
		"| never run | sync-s | **missing** | | | 0 |  |",
		"![Throughput, resident memory and queue size over time, one row per run](timeseries.png)",
		"| crash: 120,000 decisions, 6 SIGKILLs | 1 min 59 s | 240 | 142 MB | `otelcol_exporter_sent_log_records` |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	if strings.Contains(md, "Not run") {
		t.Error("a table of a step that did not run is in RESULTS.md")
	}
	if t.Failed() {
		t.Logf("RESULTS.md:\n%s", md)
	}

	// A passing run says so, and results.json carries everything RESULTS.md is made from.
	r.Failures, r.Passed = nil, true
	b.Reset()
	if err := writeMarkdown(&b, r, "", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "**Every test passed and every figure was measured.**") || strings.Contains(b.String(), "![") {
		t.Errorf("passing RESULTS.md without a plot:\n%s", b.String())
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back results
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := writeMarkdown(&again, back, "", nil); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Error("RESULTS.md from results.json differs from the original")
	}
}

// The catalogue: every row names a step that exists, every step feeds a row (no benchmark runs unreported),
// and no row appears twice.
func TestCatalogue(t *testing.T) {
	steps := map[string]bool{}
	for _, s := range benchSteps {
		if steps[s.Name] {
			t.Errorf("step %s twice", s.Name)
		}
		steps[s.Name] = true
	}
	used := map[string]bool{}
	rows := map[string]bool{}
	for _, tb := range tables {
		for _, r := range tb.Rows {
			if !steps[r.Step] {
				t.Errorf("%s: row %q names step %q, which does not exist", tb.Title, r.What, r.Step)
			}
			used[r.Step] = true
			key := r.Step + " " + r.Bench + " " + r.What
			if rows[key] {
				t.Errorf("row %q twice", key)
			}
			rows[key] = true
			if len(r.Measures) == 0 {
				t.Errorf("row %q has no measure", r.What)
			}
		}
	}
	for s := range steps {
		if !used[s] {
			t.Errorf("step %s feeds no table", s)
		}
	}
	for _, p := range deliveryPackages {
		if steps[p.Name] {
			t.Errorf("%s is both a delivery package and a benchmark step", p.Name)
		}
	}
}

// write and rewrite: the three files from the results, the same RESULTS.md again from results.json alone, and
// no stale plot when a run has no series.
func TestWriteAndRewrite(t *testing.T) {
	r := testResults(t)
	dir := t.TempDir()
	written, err := write(r, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(written, " ") != "results.json timeseries.png RESULTS.md" {
		t.Fatalf("written %v", written)
	}
	first, err := os.ReadFile(dir + "/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	again := t.TempDir()
	if err := rewrite(dir+"/results.json", again, ""); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(again + "/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Error("RESULTS.md made again from results.json differs")
	}
	if _, err := os.Stat(again + "/timeseries.png"); err != nil {
		t.Error("no plot made from results.json")
	}

	r.Series = nil
	written, err = write(r, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/timeseries.png"); !os.IsNotExist(err) || strings.Contains(strings.Join(written, " "), "png") {
		t.Errorf("a plot without series: %v, written %v", err, written)
	}
}

func TestHostileAttacksAreOneTable(t *testing.T) {
	d := deliveryResult{Package: "hostile", Present: true, Passed: true, Files: []resultFile{
		{Name: "hostile-gzip_bomb-default-full.json", Data: json.RawMessage(`{"attack":"gzip_bomb","config":"default","scale":"full","peak_rss_mib":81.5,"bound_mib":256,"legit_accepted":120,"legit_refusals":3,"legit_delivered":120,"counted":{"too_large":1}}`)},
		{Name: "hostile-idle-daemonset-full.json", Data: json.RawMessage(`{"attack":"idle","config":"daemonset","scale":"full","peak_rss_mib":60,"bound_mib":256,"legit_delivered":40}`)},
		{Name: "other.json", Data: json.RawMessage(`{"x":1}`)},
	}}
	var b bytes.Buffer
	writeDelivery(&b, d)
	out := b.String()
	if !strings.Contains(out, "| gzip_bomb | default | 81.5 MiB | 256 MiB | 120 (3) | too_large 1 |") {
		t.Errorf("no row for the gzip bomb:\n%s", out)
	}
	if strings.Index(out, "| gzip_bomb") > strings.Index(out, "| idle") {
		t.Errorf("the default config's attacks come first:\n%s", out)
	}
	if strings.Contains(out, "hostile-gzip_bomb-default-full.json") || !strings.Contains(out, "Results in `other.json`") {
		t.Errorf("attack files are in the table, other files as before:\n%s", out)
	}
}
