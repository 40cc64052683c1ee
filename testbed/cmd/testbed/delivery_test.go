// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

func readTestJSON(t *testing.T, path string) *testReport {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := parseTestJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testdata/test.json is real `go test -json` output of a passing test with logs, a failing subtest and a
// skipped test.
func TestTestReport(t *testing.T) {
	r := readTestJSON(t, "testdata/test.json")
	got := map[string]string{}
	for _, o := range r.outcomes() {
		got[o.Name] = o.Outcome
	}
	want := map[string]string{"TestCrash": "pass", "TestCases": "fail", "TestCases/gzip_bomb": "pass",
		"TestCases/deep": "fail", "TestSkipped": "skip"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	crash := r.outcomes()[0]
	wantLog := []string{"t_test.go:4: accepted 120000, stored 120000", "t_test.go:5: two", "lines"}
	if !reflect.DeepEqual(crash.Log, wantLog) {
		t.Fatalf("log %q, want %q", crash.Log, wantLog)
	}
	if r.passed() {
		t.Fatal("a run with a failed and a skipped test passed")
	}
	wantFailures := []string{"TestCases: fail", "TestCases/deep: fail", "TestSkipped: skip", "package failed"}
	if f := r.failures(); !reflect.DeepEqual(f, wantFailures) {
		t.Fatalf("failures %q, want %q", f, wantFailures)
	}

	if pass := readTestJSON(t, "testdata/test_pass.json"); !pass.passed() || len(pass.failures()) != 0 {
		t.Fatalf("a passing run: passed %v, failures %v", pass.passed(), pass.failures())
	}
	// Output without a package result (the test binary was killed, or did not build) is not a pass.
	partial := newTestReport()
	partial.add(`{"Action":"run","Package":"p","Test":"TestX"}`)
	partial.add(`{"Action":"pass","Package":"p","Test":"TestX"}`)
	partial.add("# p\n./x_test.go:3:1: syntax error")
	if partial.passed() {
		t.Fatal("a run without the package's result passed")
	}
}

func TestReadResultFiles(t *testing.T) {
	files, err := readResultFiles("testdata/scratch", "crash")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name != "crash-full.json" {
		t.Fatalf("files %+v", files)
	}
	var v map[string]any
	if err := json.Unmarshal(files[0].Data, &v); err != nil || v["accepted"] != float64(120000) {
		t.Fatalf("data %s: %v", files[0].Data, err)
	}
	none, err := readResultFiles("testdata/scratch", "outage")
	if err != nil || len(none) != 0 {
		t.Fatalf("outage files %v, %v", none, err)
	}
}
