// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package arrivals

import "slices"

// Tally compares what arrived with what the collector accepted.
type Tally struct {
	Accepted      int      `json:"accepted"`
	StoredLines   int      `json:"stored_lines"`
	Distinct      int      `json:"distinct_ids"`
	Duplicates    int      `json:"duplicate_lines"`   // stored lines beyond the first of each id
	DuplicatedIDs int      `json:"duplicated_ids"`    // ids stored more than once
	DuplicateRate float64  `json:"duplicate_rate"`    // Duplicates / Distinct
	Lost          []string `json:"lost,omitempty"`    // accepted, never stored
	Foreign       []string `json:"foreign,omitempty"` // stored, never accepted
}

// Count tallies perID (how often each id arrived) against the accepted ids.
func Count(accepted []string, perID map[string]int) Tally {
	t := Tally{Accepted: len(accepted), Distinct: len(perID)}
	want := make(map[string]bool, len(accepted))
	for _, id := range accepted {
		want[id] = true
		if perID[id] == 0 {
			t.Lost = append(t.Lost, id)
		}
	}
	for id, n := range perID {
		t.StoredLines += n
		if !want[id] {
			t.Foreign = append(t.Foreign, id)
		}
		if n > 1 {
			t.DuplicatedIDs++
		}
	}
	t.Duplicates = t.StoredLines - t.Distinct
	if t.Distinct > 0 {
		t.DuplicateRate = float64(t.Duplicates) / float64(t.Distinct)
	}
	slices.Sort(t.Lost)
	slices.Sort(t.Foreign)
	return t
}

// Missing is how many accepted ids have not arrived.
func Missing(accepted []string, perID map[string]int) int {
	n := 0
	for _, id := range accepted {
		if perID[id] == 0 {
			n++
		}
	}
	return n
}
