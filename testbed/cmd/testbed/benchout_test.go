// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseBench(t *testing.T) {
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := parseBench(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range lines {
		names = append(names, l.Name+"#"+l.Run)
	}
	want := []string{
		"BenchmarkConsumeLogs/sync#", "BenchmarkConsumeLogs/sync#", "BenchmarkConsumeLogs/sync#",
		"BenchmarkConsumeLogs/nosync#", "BenchmarkConsumeLogs/nosync#",
		"BenchmarkK8sReports/persistent#1", "BenchmarkK8sReports/persistent#2", "BenchmarkK8sReports/odd-5#1",
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("names\n got %q\nwant %q", names, want)
	}
	first := lines[0]
	if first.Pkg != "github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter" || first.Iterations != 354 {
		t.Fatalf("first line %+v", first)
	}
	wantMetrics := map[string]float64{"ns/op": 2801234, "records/s": 357000, "B/op": 123456, "allocs/op": 12}
	if !reflect.DeepEqual(first.Metrics, wantMetrics) {
		t.Fatalf("metrics %v, want %v", first.Metrics, wantMetrics)
	}
	k := lines[6]
	if k.Pkg != "github.com/otelcol-policy/otelcol-policy/testbed/k8sreports" || k.Metrics["sync-s"] != 10 ||
		k.Metrics["after-last-update-s"] != 0.12 || k.Metrics["peak-rss-MB"] != 250 {
		t.Fatalf("k8sreports line %+v", k)
	}
}

func TestParseBenchRejectsABadValue(t *testing.T) {
	_, err := parseBench(strings.NewReader("BenchmarkX-2 \t 1\t abc ns/op\n"), 2)
	if err == nil {
		t.Fatal("a non-numeric value was accepted")
	}
}

func TestBenchName(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		procs     int
		name, run string
	}{
		{"BenchmarkX-2", 2, "BenchmarkX", ""},
		{"BenchmarkX-2", 1, "BenchmarkX-2", ""}, // GOMAXPROCS=1: no suffix was added, so none is removed
		{"BenchmarkX/a-5-2", 2, "BenchmarkX/a-5", ""},
		{"BenchmarkX/a-5", 2, "BenchmarkX/a-5", ""},
		{"BenchmarkK/s/run=12-8", 8, "BenchmarkK/s", "12"},
		{"BenchmarkK/run=1/s-2", 2, "BenchmarkK/run=1/s", ""},
	} {
		name, run := benchName(tc.raw, tc.procs)
		if name != tc.name || run != tc.run {
			t.Errorf("benchName(%q, %d) = %q, %q; want %q, %q", tc.raw, tc.procs, name, run, tc.name, tc.run)
		}
	}
}
