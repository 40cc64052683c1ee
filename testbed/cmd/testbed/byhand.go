// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// byHandFile holds the figures measured once, by hand, outside the suite: comparisons of two commits, a peer
// that is not built here, a profile. The suite cannot measure them again, yet the READMEs quote them, and every
// figure a README quotes must be in RESULTS.md (internal/docstest): so RESULTS.md renders them, in a section of
// their own that says when and how each was measured, rather than the READMEs stating them unchecked.
const byHandFile = "testbed/results/by-hand.yaml"

// handTable is one measurement made by hand: when, how, and its figures as a table.
type handTable struct {
	Title   string     `json:"title"`
	When    string     `json:"when"`
	How     string     `json:"how"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// readByHand reads the hand-measured tables of path; none when path is empty.
func readByHand(path string) ([]handTable, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the figures measured by hand (run from the repository root, or -by-hand ''): %w", err)
	}
	var tables []handTable
	if err := yaml.UnmarshalStrict(b, &tables); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for i, t := range tables {
		if t.Title == "" || t.When == "" || t.How == "" || len(t.Columns) == 0 || len(t.Rows) == 0 {
			errs = append(errs, fmt.Errorf("%s: table %d (%q) needs a title, when, how, columns and rows", path, i+1, t.Title))
		}
		for j, r := range t.Rows {
			if len(r) != len(t.Columns) {
				errs = append(errs, fmt.Errorf("%s: %q row %d has %d cells for %d columns", path, t.Title, j+1, len(r), len(t.Columns)))
			}
		}
	}
	return tables, errors.Join(errs...)
}

// byHandIntro says, in RESULTS.md, what the section of hand-measured figures is and is not.
const byHandIntro = "Not measured by this run: figures measured once, by hand, outside the suite (two commits " +
	"compared, a peer, a profile), kept in [by-hand.yaml](by-hand.yaml) with when and how each was taken. Other " +
	"days and other loads: compare them with each other, not with the figures above."

func writeByHand(b *bytes.Buffer, tables []handTable) {
	if len(tables) == 0 {
		return
	}
	b.WriteString("## Measured by hand\n\n" + byHandIntro + "\n\n")
	row := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	for _, t := range tables {
		fmt.Fprintf(b, "### %s\n\n**%s.** %s\n\n", t.Title, t.When, strings.TrimSpace(t.How))
		row(t.Columns)
		b.WriteString("|" + strings.Repeat(" --- |", len(t.Columns)) + "\n")
		for _, r := range t.Rows {
			row(r)
		}
		b.WriteString("\n")
	}
}
