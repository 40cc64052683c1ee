// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
	"time"
)

// benchStep is one `go test -bench` invocation of the suite.
type benchStep struct {
	Name  string   // for -only and the progress lines
	Pkg   string   // e.g. ./exporter/durablefileexporter/
	Bench string   // the -bench regexp
	Args  []string // -benchtime, -count
	Env   []string // NAME=value, on top of the suite's environment
	// Runs is how many runs each of its figures has, when not the suite's `runs` (a run at scale is too long to
	// repeat).
	Runs    int
	Timeout time.Duration
	// About is what the step takes on the 2-core machine, printed before it starts so that a long silence is
	// expected.
	About time.Duration
}

// args are the go test arguments of the step.
func (s benchStep) args() []string {
	a := []string{"test", "-run", "^$", "-bench", s.Bench}
	a = append(a, s.Args...)
	return append(a, "-timeout", minutes(s.Timeout), s.Pkg)
}

// command is the step as a shell command, for RESULTS.md: what to run to measure one figure again.
func (s benchStep) command() string {
	var b strings.Builder
	for _, e := range s.Env {
		b.WriteString(e + " ")
	}
	b.WriteString("go")
	for _, a := range s.args() {
		if a == "^$" || strings.ContainsAny(a, "|()*$^ ") {
			a = "'" + a + "'"
		}
		b.WriteString(" " + a)
	}
	return b.String()
}

// runs is how many times the suite measures each figure. The go benchmarks repeat with -count; the k8sreports
// benchmark repeats inside one invocation (BENCH_RUNS), as creating its 10,000 reports takes longer than a run.
const runs = 3

var count = []string{"-count", "3"}

// benchSteps are all the benchmarks of the repository (`grep -rl "func Benchmark" --include=*_test.go .`),
// cheapest first. About: what each took on the 2-core machine, compiling the test binary included.
var benchSteps = []benchStep{
	{Name: "policyresult", Pkg: "./pkg/policyresult/", Bench: "^Benchmark(KeyAndID|WriteLogRecord)$", Args: count, Timeout: 5 * time.Minute, About: 15 * time.Second},
	{Name: "recordjson", Pkg: "./pkg/recordjson/", Bench: "^BenchmarkAppend$", Args: count, Timeout: 5 * time.Minute, About: 5 * time.Second},
	{Name: "jsonpdata", Pkg: "./internal/jsonpdata/", Bench: "^BenchmarkSetValue$", Args: count, Timeout: 5 * time.Minute, About: 5 * time.Second},
	{Name: "decode", Pkg: "./receiver/decisionlogsreceiver/internal/decode/", Bench: "^BenchmarkDecode", Args: count, Timeout: 5 * time.Minute, About: 50 * time.Second},
	{Name: "durablefile", Pkg: "./exporter/durablefileexporter/", Bench: "^BenchmarkConsumeLogs$", Args: count, Timeout: 5 * time.Minute, About: 10 * time.Second},
	{Name: "strip", Pkg: "./processor/k8smetadatastripprocessor/", Bench: "^BenchmarkStrip$/^decision", Args: count, Timeout: 5 * time.Minute, About: 30 * time.Second},
	// A fixed count: the benchmark copies every record outside the timer, which at the default benchtime's
	// millions of records took a minute per run for a figure that 1,000,000 records measure as well.
	{Name: "strip-result", Pkg: "./processor/k8smetadatastripprocessor/", Bench: "^BenchmarkStrip$/^result$", Args: []string{"-benchtime", "1000000x", "-count", "3"}, Timeout: 5 * time.Minute, About: 30 * time.Second},
	{Name: "aggregate", Pkg: "./processor/policyaggregateprocessor/", Bench: "^Benchmark(Aggregate|AggregateStorage)$", Args: count, Timeout: 5 * time.Minute, About: 30 * time.Second},
	{Name: "aggregate-memory", Pkg: "./processor/policyaggregateprocessor/", Bench: "^BenchmarkMemoryPerMillionKeys$", Args: []string{"-benchtime", "1x", "-count", "3"}, Timeout: 5 * time.Minute, About: 10 * time.Second},
	{Name: "policymetrics", Pkg: "./connector/policymetricsconnector/", Bench: "^Benchmark(Results|Decisions)$", Args: count, Timeout: 5 * time.Minute, About: 20 * time.Second},
	{Name: "resultsgrpc-encode", Pkg: "./exporter/resultsgrpcexporter/", Bench: "^BenchmarkEncode$", Args: count, Timeout: 5 * time.Minute, About: 15 * time.Second},
	{Name: "s3", Pkg: "./exporter/s3exporter/", Bench: "^BenchmarkS3Export$", Args: []string{"-benchtime", "2s", "-count", "3"}, Timeout: 10 * time.Minute, About: 50 * time.Second},
	{Name: "kafka", Pkg: "./exporter/kafkaexporter/", Bench: "^BenchmarkKafkaExport$", Args: count, Timeout: 10 * time.Minute, About: 35 * time.Second},
	{Name: "resultsserver-ingest", Pkg: "./results-server/server/", Bench: "^BenchmarkIngest$", Args: []string{"-benchtime", "50x", "-count", "3"}, Timeout: 10 * time.Minute, About: 100 * time.Second},
	{Name: "resultsserver-pages", Pkg: "./results-server/server/", Bench: "^BenchmarkFailingPage$", Args: []string{"-benchtime", "20x", "-count", "3"}, Timeout: 20 * time.Minute, About: 7 * time.Minute},
	// Once, three queries each: writing 1,000,000 records in both formats takes longer than the queries.
	{Name: "s3query", Pkg: "./testbed/s3query/", Bench: "^BenchmarkS3Query$", Args: []string{"-benchtime", "3x", "-count", "1"}, Runs: 1, Timeout: 30 * time.Minute, About: 3 * time.Minute},
	{Name: "resultsgrpc", Pkg: "./testbed/resultsgrpc/", Bench: "^BenchmarkResultsGRPC$", Args: []string{"-benchtime", "10x", "-count", "3"}, Timeout: 10 * time.Minute, About: 90 * time.Second},
	{Name: "decisionlogs", Pkg: "./testbed/decisionlogs/", Bench: "^BenchmarkDecisionLogs$", Args: []string{"-benchtime", "1x", "-count", "3"}, Timeout: 10 * time.Minute, About: 35 * time.Second},
	{Name: "gatekeeperexport", Pkg: "./testbed/decisionlogs/", Bench: "^BenchmarkGatekeeperExport$", Args: []string{"-benchtime", "1x", "-count", "3"}, Timeout: 10 * time.Minute, About: 45 * time.Second},
	{Name: "k8sreports", Pkg: "./testbed/k8sreports/", Bench: "^BenchmarkK8sReports$", Args: []string{"-benchtime", "1x"}, Env: []string{"BENCH_RUNS=3"}, Timeout: 25 * time.Minute, About: 5 * time.Minute},
	// Once: creating 50,000 reports takes minutes.
	{Name: "k8sreports-50k", Pkg: "./testbed/k8sreports/", Bench: "^BenchmarkK8sReports$", Args: []string{"-benchtime", "1x"}, Env: []string{"BENCH_RUNS=1", "BENCH_REPORTS=50000", "BENCH_GOMEMLIMIT=200MiB"}, Runs: 1, Timeout: 40 * time.Minute, About: 10 * time.Minute},
}

// minutes formats a whole number of minutes as go test's -timeout takes it ("10m").
func minutes(d time.Duration) string { return fmt.Sprintf("%dm", int(d.Minutes())) }
