// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Command testbed is `make testbed`: it runs the delivery tests of testbed/ at full scale and every benchmark
// of the repository, several times each, and writes testbed/results/RESULTS.md (machine, date, each figure as
// min/median/max over the runs, peak RSS, the delivery tests' outcomes), results.json (all of it, with every
// run's value and the time series) and timeseries.png (throughput and memory over time of the long runs).
//
// It fails, after writing what it measured, when a test fails or a figure was not measured: the results are
// only worth committing from a run that passed.
//
// Run it from the repository root, as `make testbed` does (the binary and the test servers built first):
//
//	go run ./testbed/cmd/testbed                       # everything, into testbed/results/
//	go run ./testbed/cmd/testbed -only crash,s3        # a part, into a scratch directory
//	go run ./testbed/cmd/testbed -from results.json    # RESULTS.md and the plot again from a results.json
//	                                                   # (and testbed/results/by-hand.yaml)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

const (
	resultsFile  = "results.json"
	markdownFile = "RESULTS.md"
	plotFile     = "timeseries.png"
)

func main() {
	out := flag.String("out", filepath.Join("testbed", "results"), "where RESULTS.md, results.json and the plot go; "+
		"with -only, the scratch directory unless given")
	only := flag.String("only", "", "comma-separated steps to run (see -list); all when empty")
	list := flag.Bool("list", false, "list the steps and exit")
	from := flag.String("from", "", "write RESULTS.md and the plot from this results.json instead of measuring")
	byHandPath := flag.String("by-hand", byHandFile, "the figures measured by hand that RESULTS.md shows in a section of their own; '' for none")
	flag.Parse()
	outGiven := false
	flag.Visit(func(f *flag.Flag) { outGiven = outGiven || f.Name == "out" })

	switch {
	case *list:
		for _, p := range deliveryPackages {
			fmt.Printf("%-20s delivery tests of ./%s/ (about %s)\n", p.Name, p.dir(), p.About)
		}
		for _, s := range benchSteps {
			fmt.Printf("%-20s %s (about %s)\n", s.Name, s.command(), s.About)
		}
	case *from != "":
		if err := rewrite(*from, *out, *byHandPath); err != nil {
			fmt.Fprintln(os.Stderr, "testbed:", err)
			os.Exit(1)
		}
	default:
		ok, err := suite(*out, outGiven, *only, *byHandPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testbed:", err)
			os.Exit(2)
		}
		if !ok {
			os.Exit(1)
		}
	}
}

// suite runs the selected steps and writes the results; false when a test failed or a figure is missing.
func suite(out string, outGiven bool, only, byHandPath string) (bool, error) {
	if _, err := os.Stat("go.mod"); err != nil {
		return false, fmt.Errorf("run from the repository root (as `make testbed` does): %w", err)
	}
	// Read before the steps run: a mistake in the file should not cost a whole suite run.
	byHand, err := readByHand(byHandPath)
	if err != nil {
		return false, err
	}
	delivery, benches, err := selectSteps(only)
	if err != nil {
		return false, err
	}
	began := time.Now()
	pr := progress{began: began}
	r := results{Date: utcDate(began), Machine: describeMachine()}
	scratch, err := os.MkdirTemp("", "testbed-")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Join(scratch, "logs"), 0o755); err != nil {
		return false, err
	}
	if only != "" {
		r.Only = strings.Split(only, ",")
		if !outGiven {
			out = scratch
		}
	}
	var about time.Duration
	for _, p := range delivery {
		about += p.About
	}
	for _, s := range benches {
		about += s.About
	}
	pr.printf("%d delivery test packages and %d benchmark steps, about %s on %d cores (load %s); logs and raw results in %s",
		len(delivery), len(benches), duration(about.Seconds()), r.Machine.Cores, r.Machine.Load, scratch)
	env := []string{"TESTBED_SCALE=full", procsample.ResultsDirEnv + "=" + scratch}

	for i, p := range delivery {
		d := runDelivery(pr, p, env, scratch, fmt.Sprintf("%d/%d", i+1, len(delivery)))
		r.Delivery = append(r.Delivery, d)
		if d.Present && !d.Passed {
			r.Failures = append(r.Failures, "testbed/"+p.Name+" failed: see its section and "+d.Run.Log)
		}
		if !d.Present && !p.Optional {
			r.Failures = append(r.Failures, "testbed/"+p.Name+" has no tests")
		}
	}

	ran := map[string]benchStep{}
	for i, s := range benches {
		pr.printf("benchmark %d/%d %s: %s (about %s)", i+1, len(benches), s.Name, s.command(), s.About)
		var output strings.Builder
		logPath := filepath.Join(scratch, "logs", s.Name+".log")
		start := time.Now()
		code, err := runGo(s.args(), append(slices.Clone(env), s.Env...), logPath, func(line string) string {
			output.WriteString(line + "\n")
			return line
		})
		if err != nil {
			return false, err
		}
		run := stepRun{Name: s.Name, Command: s.command(), Seconds: time.Since(start).Seconds(), ExitCode: code, Log: logPath}
		r.Steps = append(r.Steps, run)
		ran[s.Name] = s
		lines, err := parseBench(strings.NewReader(output.String()), runtime.GOMAXPROCS(0))
		if err != nil {
			return false, err
		}
		for j := range lines {
			lines[j].Step = s.Name
		}
		r.Benchmarks = append(r.Benchmarks, lines...)
		pr.printf("%s: exit %d after %s, %d benchmark results", s.Name, code, duration(run.Seconds), len(lines))
		if code != 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("benchmark step %s exited with %d: see %s", s.Name, code, logPath))
		}
	}
	tables, missing := evaluate(tables, r.Benchmarks, ran, runs)
	r.Tables = tables
	r.Failures = append(r.Failures, missing...)

	series, err := readAllSeries(filepath.Join(scratch, "series"))
	if err != nil {
		r.Failures = append(r.Failures, "time series: "+err.Error())
	}
	r.Series = series
	r.WallS = time.Since(began).Seconds()
	r.Passed = len(r.Failures) == 0
	written, err := write(r, out, byHand)
	if err != nil {
		return false, err
	}
	pr.printf("wrote %s in %s", strings.Join(written, ", "), out)
	if !r.Passed {
		pr.printf("FAILED:")
		for _, f := range r.Failures {
			fmt.Println("  - " + f)
		}
		return false, nil
	}
	pr.printf("passed: every test passed and every figure was measured, in %s", duration(r.WallS))
	return true, nil
}

// selectSteps returns the delivery packages and benchmark steps named in only (all when empty), in the suite's
// order.
func selectSteps(only string) ([]deliveryPackage, []benchStep, error) {
	if only == "" {
		return deliveryPackages, benchSteps, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var delivery []deliveryPackage
	var benches []benchStep
	for _, p := range deliveryPackages {
		if want[p.Name] {
			delivery = append(delivery, p)
			delete(want, p.Name)
		}
	}
	for _, s := range benchSteps {
		if want[s.Name] {
			benches = append(benches, s)
			delete(want, s.Name)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		sort.Strings(unknown)
		return nil, nil, fmt.Errorf("unknown steps %s (see -list)", strings.Join(unknown, ", "))
	}
	return delivery, benches, nil
}

func runDelivery(pr progress, p deliveryPackage, env []string, scratch, nth string) deliveryResult {
	d := deliveryResult{Package: p.Name, Present: p.present()}
	if !d.Present {
		pr.printf("delivery %s %s: ./%s/ has no tests, skipped", nth, p.Name, p.dir())
		return d
	}
	args := p.args()
	command := "TESTBED_SCALE=full go " + strings.Join(args, " ")
	pr.printf("delivery %s %s: %s (about %s)", nth, p.Name, command, p.About)
	logPath := filepath.Join(scratch, "logs", p.Name+".log")
	report := newTestReport()
	start := time.Now()
	code, err := runGo(args, env, logPath, report.add)
	run := stepRun{Name: p.Name, Command: command, Seconds: time.Since(start).Seconds(), ExitCode: code, Log: logPath}
	d.Run = &run
	d.Tests = report.outcomes()
	d.Passed = err == nil && code == 0 && report.passed()
	files, ferr := readResultFiles(scratch, p.Name)
	d.Files = files
	switch {
	case err != nil:
		pr.printf("%s: could not run: %v", p.Name, err)
	case ferr != nil:
		d.Passed = false
		pr.printf("%s: its results: %v", p.Name, ferr)
	case d.Passed:
		pr.printf("%s: passed in %s", p.Name, duration(run.Seconds))
	default:
		pr.printf("%s: FAILED (exit %d): %s", p.Name, code, strings.Join(report.failures(), "; "))
	}
	return d
}

// readAllSeries reads the series the tests and benchmarks wrote, in the order they were written (the suite's
// order: crash before outage, the k8s_reports setups in the order they ran).
func readAllSeries(dir string) ([]procsample.Series, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	written := map[string]time.Time{}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil {
			written[p] = st.ModTime()
		}
	}
	sort.SliceStable(paths, func(i, j int) bool {
		if !written[paths[i]].Equal(written[paths[j]]) {
			return written[paths[i]].Before(written[paths[j]])
		}
		return paths[i] < paths[j]
	})
	var out []procsample.Series
	for _, p := range paths {
		s, err := procsample.ReadSeries(p)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// write stores results.json, the plot (when there are series to plot) and RESULTS.md in dir, and returns the
// names of the files written.
func write(r results, dir string, byHand []handTable) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, resultsFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	written, err := writeReport(r, dir, byHand)
	return append([]string{resultsFile}, written...), err
}

// writeReport writes the plot and RESULTS.md from r and byHand, and returns the names of the files written. A
// plot left over from an earlier run is removed when this one has no series, so that RESULTS.md and the folder
// agree.
func writeReport(r results, dir string, byHand []handTable) ([]string, error) {
	var written []string
	plotName := ""
	if series := plotted(r.Series); len(series) > 0 {
		plotName = plotFile
		if err := writePlotFile(filepath.Join(dir, plotFile), series); err != nil {
			return written, err
		}
		written = append(written, plotFile)
	} else if err := os.Remove(filepath.Join(dir, plotFile)); err != nil && !os.IsNotExist(err) {
		return written, err
	}
	f, err := os.Create(filepath.Join(dir, markdownFile))
	if err != nil {
		return written, err
	}
	if err := writeMarkdown(f, r, plotName, byHand); err != nil {
		f.Close()
		return written, err
	}
	return append(written, markdownFile), f.Close()
}

// rewrite makes RESULTS.md and the plot again from a results.json and the figures measured by hand, into dir.
func rewrite(from, dir, byHandPath string) error {
	byHand, err := readByHand(byHandPath)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, err = writeReport(r, dir, byHand)
	return err
}
