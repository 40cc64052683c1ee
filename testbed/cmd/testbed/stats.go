// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"slices"
)

// summary is what RESULTS.md shows of a figure measured several times.
type summary struct {
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
	Max    float64   `json:"max"`
	Runs   int       `json:"runs"`
	Values []float64 `json:"values"` // in the order measured
}

// summarize returns the min, median (the mean of the middle two for an even count) and max of values.
func summarize(values []float64) summary {
	s := summary{Runs: len(values), Values: slices.Clone(values)}
	if len(values) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(values))
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		s.Median = sorted[mid]
	} else {
		s.Median = (sorted[mid-1] + sorted[mid]) / 2
	}
	return s
}
