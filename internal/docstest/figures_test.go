// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package docstest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// resultsFile is the one source of measured figures.
const resultsFile = "testbed/results/RESULTS.md"

// The rule of TestDocumentedFiguresAreMeasured, kept simple on purpose:
//
//   - A statement is a sentence of prose, or one row of a table read together with the table's header row.
//     Fenced code blocks, inline code spans and link targets are not read, so config values (`max_batch_bytes:
//     4194304`, `30s`), commands and versions are never figures.
//   - A statement speaks of a measurement when it uses one of measurementWords (throughput, records/s, peak,
//     RSS, median, latency, benchmark, measured, faster, …). Config defaults ("every 30 s", "4 MiB per
//     request") and setup descriptions ("10,000 PolicyReports in 50 namespaces") do not, and are not checked.
//   - Every number in such a statement (1,000 / 11.1 / 168.7k) must be a number RESULTS.md states somewhere,
//     compared by value. So a README either links to the RESULTS.md section (see TestResultsLinksResolve) or
//     quotes exactly what it says; a rerun of the testbed that changes a quoted figure fails this test until
//     the quote follows.
//   - A figure the suite cannot measure again (two commits compared by hand, a peer not built here, a profile)
//     is no exception: it goes into testbed/results/by-hand.yaml with when and how it was measured, and the
//     runner renders it into RESULTS.md's section "Measured by hand" (testbed/cmd/testbed checks that the
//     shipped RESULTS.md is that rendering), from where a README quotes it like any other.
//
// How long a build or download takes (the first `make test`) is not a testbed measurement and uses none of
// these words.
var measurementWords = regexp.MustCompile(`(?i)measur|benchmark|throughput|\bpeak\b|\bRSS\b|median|\bp50\b|\bp99\b|` +
	`latency|faster|slower|per second|[a-z]/s\b|\dk?/s\b|initial sync|bytes per record|per op\b|allocations`)

// number is a figure: not part of a word, a version or a dotted name (k8s, s3, v1.36.3, policy.v1), with a
// thousands separator or a decimal part, and an optional "k" for thousands (168.7k/s).
var number = regexp.MustCompile(`(^|[^\p{L}\p{N}_.\-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(k?)(\p{L}?)`)

// Markdown that is not prose: inline code, link targets, HTML comments.
var (
	codeSpan   = regexp.MustCompile("`[^`]*`")
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
	comment    = regexp.MustCompile(`<!--.*?-->`)
)

// documentedFiles are the Markdown files whose figures must be measured ones: the top-level README, every
// component's README and its kind's index, the results server's, the distribution's, docs/, and every README
// of testbed/ (testbed/results/README.md included: it explains RESULTS.md and must not contradict it).
func documentedFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{
		"README.md", "docs/*.md", "results-server/README.md",
		"receiver/README.md", "processor/README.md", "connector/README.md", "exporter/README.md", "extension/README.md",
		"receiver/*/README.md", "processor/*/README.md", "connector/*/README.md", "exporter/*/README.md", "extension/*/README.md",
	} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		files = append(files, m...)
	}
	for _, dir := range []string{filepath.Join("distributions", "otelcol-policy"), "testbed"} {
		require.NoError(t, filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "README.md" {
				files = append(files, p)
			}
			return err
		}))
	}
	require.Greater(t, len(files), 15, "the READMEs of the repository")
	return files
}

// statement is a sentence or a table row (with its header), and the line it starts on.
type statement struct {
	line int
	text string
}

// statements splits Markdown into statements, leaving out fenced code blocks.
func statements(md string) []statement {
	var out []statement
	var para []string
	paraLine, header, fenced := 0, "", false
	flush := func() {
		text := strings.Join(para, " ")
		para = nil
		for _, s := range regexp.MustCompile(`[.;!?]\s+`).Split(text, -1) {
			out = append(out, statement{paraLine, s})
		}
	}
	for i, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case strings.HasPrefix(trimmed, "|"):
			flush()
			if header == "" {
				header = trimmed
			} else if !strings.HasPrefix(strings.ReplaceAll(trimmed, " ", ""), "|---") {
				out = append(out, statement{i + 1, header + " " + trimmed})
			}
			continue
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			flush()
			if trimmed != "" {
				out = append(out, statement{i + 1, trimmed})
			}
		default:
			if len(para) == 0 {
				paraLine = i + 1
			}
			para = append(para, trimmed)
		}
		header = ""
	}
	flush()
	return out
}

// figures are the numbers of a text, by value.
func figures(text string) []float64 {
	var out []float64
	for _, m := range number.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", "")+m[3], 64)
		if err != nil {
			continue
		}
		if m[4] == "k" && m[5] == "" {
			v *= 1000
		}
		out = append(out, v)
	}
	return out
}

func prose(s string) string {
	return codeSpan.ReplaceAllString(linkTarget.ReplaceAllString(comment.ReplaceAllString(s, " "), "]"), " ")
}

// TestDocumentedFiguresAreMeasured fails when a README or a page of docs/ states a measured figure that
// RESULTS.md does not hold (the rule is above measurementWords).
func TestDocumentedFiguresAreMeasured(t *testing.T) {
	root := collectortest.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, resultsFile))
	require.NoError(t, err)
	measured := map[float64]bool{}
	for _, v := range figures(string(raw)) {
		measured[v] = true
	}
	require.Greater(t, len(measured), 200, "the figures of %s", resultsFile)

	for _, f := range documentedFiles(t, root) {
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		md, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, s := range statements(string(md)) {
			text := prose(s.text)
			if !measurementWords.MatchString(text) {
				continue
			}
			for _, v := range figures(text) {
				if !measured[v] {
					t.Errorf("%s:%d: %s is not a figure of %s: link to its section instead, or quote it exactly\n\t%s",
						rel, s.line, strconv.FormatFloat(v, 'f', -1, 64), resultsFile, strings.TrimSpace(s.text))
				}
			}
		}
	}
}

// headingSlug is the anchor GitHub gives a heading: lower case, every character but letters, marks, numbers,
// connector punctuation (_), spaces and hyphens dropped, spaces as hyphens.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestResultsLinksResolve: a link into RESULTS.md names one of its sections, so that a renamed section does
// not leave the READMEs pointing at nothing.
func TestResultsLinksResolve(t *testing.T) {
	root := collectortest.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, resultsFile))
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, h := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(string(raw), -1) {
		anchors[headingSlug(h[1])] = true
	}
	require.True(t, anchors["machine"], "RESULTS.md's sections: %v", anchors)

	link := regexp.MustCompile(`\]\(([^)#\s]*RESULTS\.md)(#[^)\s]*)?\)`)
	n := 0
	for _, f := range documentedFiles(t, root) {
		md, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(md), -1) {
			n++
			target := filepath.Join(filepath.Dir(f), m[1])
			require.Equal(t, filepath.Join(root, resultsFile), target, "%s links to %s", f, m[1])
			if m[2] != "" {
				require.True(t, anchors[strings.TrimPrefix(m[2], "#")], "%s links to %s%s, a section RESULTS.md does not have", f, m[1], m[2])
			}
		}
	}
	require.Positive(t, n, "the READMEs link to RESULTS.md")
}
