// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// deliveryPackage is a package of delivery tests under testbed/, run at full scale.
type deliveryPackage struct {
	Name string // testbed/<Name>
	// Optional packages may be missing from the tree (reported, not failed): for a delivery test written while
	// the suite already runs. A package that exists always runs, and its failure fails the suite.
	Optional bool
	Timeout  time.Duration
	About    time.Duration
	Parallel int // go test -parallel; 0 keeps go test's default (GOMAXPROCS)
}

var deliveryPackages = []deliveryPackage{
	{Name: "crash", Timeout: 20 * time.Minute, About: 2*time.Minute + 15*time.Second},
	{Name: "restart", Timeout: 10 * time.Minute, About: 30 * time.Second},
	{Name: "handover", Timeout: 20 * time.Minute, About: 2 * time.Minute},
	{Name: "badinput", Timeout: 10 * time.Minute, About: 60 * time.Second},
	// Measured at 15 min on the 2-core machine since issue 29 seeded 200,000 results per results-server attack.
	{Name: "hostile", Timeout: 30 * time.Minute, About: 15 * time.Minute},
	// The four outages run at the same time: each is a parallel test mostly waiting on its backend's outage.
	{Name: "outage", Timeout: 20 * time.Minute, About: 4 * time.Minute, Parallel: 4},
}

func (p deliveryPackage) dir() string { return filepath.Join("testbed", p.Name) }

func (p deliveryPackage) args() []string {
	args := []string{"test", "-count=1", "-json", "-timeout", minutes(p.Timeout)}
	if p.Parallel > 0 {
		args = append(args, "-parallel", fmt.Sprint(p.Parallel))
	}
	return append(args, "./"+p.dir()+"/")
}

// present is whether the package has tests in the working tree.
func (p deliveryPackage) present() bool {
	m, _ := filepath.Glob(filepath.Join(p.dir(), "*_test.go"))
	return len(m) > 0
}

// deliveryResult is one package's run: the outcome of each test, what the tests logged, and the JSON results
// they wrote to $TESTBED_RESULTS_DIR (<name>-*.json).
type deliveryResult struct {
	Package string        `json:"package"`
	Present bool          `json:"present"`
	Passed  bool          `json:"passed"`
	Run     *stepRun      `json:"run,omitempty"`
	Tests   []testOutcome `json:"tests,omitempty"`
	Files   []resultFile  `json:"files,omitempty"`
}

type testOutcome struct {
	Name    string   `json:"name"` // e.g. TestCrashNothingLost or TestX/sub
	Outcome string   `json:"outcome"`
	Seconds float64  `json:"seconds"`
	Log     []string `json:"log,omitempty"` // the test's t.Log lines
}

// resultFile is a JSON file a delivery test wrote, kept as it is.
type resultFile struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// testEvent is a line of `go test -json`.
type testEvent struct {
	Action  string  `json:"Action"`
	Package string  `json:"Package"`
	Test    string  `json:"Test"`
	Elapsed float64 `json:"Elapsed"`
	Output  string  `json:"Output"`
}

// testReport reads `go test -json` output: the outcome and log of each test, and whether the package passed
// (false as well for a build failure, a panic or a timeout, which fail no single test).
type testReport struct {
	tests   map[string]*testOutcome
	order   []string
	pkgPass bool
	pkgSeen bool
}

func newTestReport() *testReport { return &testReport{tests: map[string]*testOutcome{}} }

// add takes one line of output; it returns the line's text as `go test -v` would have printed it.
func (r *testReport) add(line string) string {
	var ev testEvent
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil {
		return line // the go command's own output (build errors)
	}
	if ev.Test == "" {
		switch ev.Action {
		case "pass":
			r.pkgPass, r.pkgSeen = true, true
		case "fail":
			r.pkgPass, r.pkgSeen = false, true
		}
		return strings.TrimRight(ev.Output, "\n")
	}
	t := r.tests[ev.Test]
	if t == nil {
		t = &testOutcome{Name: ev.Test}
		r.tests[ev.Test] = t
		r.order = append(r.order, ev.Test)
	}
	switch ev.Action {
	case "pass", "fail", "skip":
		t.Outcome, t.Seconds = ev.Action, ev.Elapsed
	case "output":
		if l := logLine(ev.Output); l != "" {
			t.Log = append(t.Log, l)
		}
	}
	return strings.TrimRight(ev.Output, "\n")
}

// logLine is the text of a t.Log line ("    file_test.go:12: text", continuation lines indented further), ""
// for the framework's own lines.
func logLine(out string) string {
	s := strings.TrimRight(out, "\n")
	trimmed := strings.TrimLeft(s, " ")
	if trimmed == "" || strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") || len(s) == len(trimmed) {
		return ""
	}
	return trimmed
}

func (r *testReport) outcomes() []testOutcome {
	out := make([]testOutcome, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, *r.tests[name])
	}
	return out
}

// passed: the package passed, and so did every test that ran (none skipped: the suite needs each result).
func (r *testReport) passed() bool {
	if !r.pkgSeen || !r.pkgPass || len(r.order) == 0 {
		return false
	}
	for _, t := range r.tests {
		if t.Outcome != "pass" {
			return false
		}
	}
	return true
}

// failures names what went wrong, for the suite's summary.
func (r *testReport) failures() []string {
	var out []string
	for _, name := range r.order {
		if t := r.tests[name]; t.Outcome != "pass" {
			o := t.Outcome
			if o == "" {
				o = "did not finish"
			}
			out = append(out, name+": "+o)
		}
	}
	if len(r.order) == 0 {
		out = append(out, "no test ran")
	} else if !r.pkgSeen || !r.pkgPass {
		out = append(out, "package failed")
	}
	return out
}

func parseTestJSON(rd io.Reader) (*testReport, error) {
	r := newTestReport()
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		r.add(sc.Text())
	}
	return r, sc.Err()
}

// readResultFiles reads the <name>-*.json files a package's tests wrote into dir.
func readResultFiles(dir, name string) ([]resultFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, name+"-*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []resultFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, resultFile{Name: filepath.Base(p), Data: json.RawMessage(compact.Bytes())})
	}
	return out, nil
}
