// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoByHand is the shipped file, from this package's directory.
var repoByHand = filepath.Join("..", "..", "..", byHandFile)

func TestByHandSection(t *testing.T) {
	tables := []handTable{{Title: "A/B", When: "2026-11-24", How: "Alternately.\n", Columns: []string{"benchmark", "before", "after"},
		Rows: [][]string{{"`BenchmarkX`", "1,064", "1,066"}}}}
	r := testResults(t)
	var b bytes.Buffer
	if err := writeMarkdown(&b, r, "", tables); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	intro := "is in [results.json](results.json), but the section [Measured by hand](#measured-by-hand), which is from [by-hand.yaml](by-hand.yaml)."
	section := "### A/B\n\n**2026-11-24.** Alternately.\n\n| benchmark | before | after |\n| --- | --- | --- |\n| `BenchmarkX` | 1,064 | 1,066 |\n"
	if !strings.Contains(md, intro) || !strings.Contains(md, "## Measured by hand\n\n"+byHandIntro) || !strings.Contains(md, section) {
		t.Errorf("RESULTS.md lacks the section of figures measured by hand, or the intro's word of it:\n%s", md)
	}
	if strings.Index(md, "## Measured by hand") < strings.Index(md, "## Memory and throughput over time") {
		t.Error("the figures measured by hand come after the run's own")
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "by-hand.yaml")
	for name, content := range map[string]string{
		"no when":       "- {title: t, how: h, columns: [a], rows: [[x]]}",
		"short row":     "- {title: t, when: w, how: h, columns: [a, b], rows: [[x]]}",
		"unknown field": "- {title: t, when: w, how: h, columns: [a], rows: [[x]], date: d}",
	} {
		if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readByHand(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The shipped RESULTS.md is what the runner renders from the shipped results.json and by-hand.yaml: an edit of
// either (or of RESULTS.md by hand) without `-from` fails here.
func TestShippedResultsAreRendered(t *testing.T) {
	byHand, err := readByHand(repoByHand)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(repoByHand)
	raw, err := os.ReadFile(filepath.Join(dir, resultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	plotName := ""
	if len(plotted(r.Series)) > 0 {
		plotName = plotFile
	}
	var b bytes.Buffer
	if err := writeMarkdown(&b, r, plotName, byHand); err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(dir, markdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(shipped) {
		t.Errorf("%s is not what results.json and by-hand.yaml render: go run ./testbed/cmd/testbed -from testbed/results/results.json", markdownFile)
	}
}
