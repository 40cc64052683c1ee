// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// benchLine is one result line of `go test -bench` output: one run of one benchmark.
type benchLine struct {
	Step       string             `json:"step"` // the suite's step that ran it
	Pkg        string             `json:"pkg"`  // from the "pkg:" header before it
	Name       string             `json:"name"` // e.g. BenchmarkK8sReports/persistent, see benchName
	Run        string             `json:"run,omitempty"`
	Iterations int64              `json:"iterations"`
	Metrics    map[string]float64 `json:"metrics"` // by unit: "ns/op", "allocs/op", "records/s", ...
}

// runSuffix is a trailing "/run=N" sub-benchmark: a benchmark that repeats itself inside one invocation (the
// k8sreports benchmark, whose setup is too slow for -count) names its runs so.
var runSuffix = regexp.MustCompile(`/run=(\d+)$`)

// benchName removes what varies between runs of the same benchmark: the "-GOMAXPROCS" suffix that the testing
// package appends when GOMAXPROCS > 1 (only that value, so that a sub-benchmark named "x-5" stays intact) and a
// trailing "/run=N".
func benchName(raw string, procs int) (name, run string) {
	if procs > 1 {
		raw = strings.TrimSuffix(raw, "-"+strconv.Itoa(procs))
	}
	if m := runSuffix.FindStringSubmatch(raw); m != nil {
		return strings.TrimSuffix(raw, m[0]), m[1]
	}
	return raw, ""
}

// parseBench reads `go test -bench` output (without -v) and returns its result lines in order; log lines, the
// "--- BENCH:" blocks and the headers other than "pkg:" are skipped. procs is the GOMAXPROCS the benchmarks ran
// with.
func parseBench(r io.Reader, procs int) ([]benchLine, error) {
	var out []benchLine
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		// name, iterations, then value-unit pairs; a bare name (printed before the run with -v) has no pairs.
		if len(f) < 4 || len(f)%2 != 0 {
			continue
		}
		iters, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		bl := benchLine{Pkg: pkg, Iterations: iters, Metrics: map[string]float64{}}
		bl.Name, bl.Run = benchName(f[0], procs)
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: value %q: %w", line, f[i], err)
			}
			bl.Metrics[f[i+1]] = v
		}
		out = append(out, bl)
	}
	return out, sc.Err()
}
