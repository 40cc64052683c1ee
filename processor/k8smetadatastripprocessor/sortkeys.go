// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import (
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// sortBuffer is reused for every map one ConsumeLogs call sorts. The sort permutes order, plain integers,
// rather than the entries themselves: entries hold pointers, and every move of a pointer on the heap costs a
// write barrier while the GC runs.
type sortBuffer struct {
	keys   []string
	values []pcommon.Value
	order  []int
}

// sortKeys puts m's entries in key order. Maps already in order (most labels and annotations: Go's
// encoding/json writes maps sorted) are only read.
func (b *sortBuffer) sortKeys(m pcommon.Map) {
	if keysSorted(m) {
		return
	}
	b.keys, b.values, b.order = b.keys[:0], b.values[:0], b.order[:0]
	for k, v := range m.All() {
		b.order = append(b.order, len(b.keys))
		b.keys = append(b.keys, k)
		b.values = append(b.values, v)
	}
	// Stable, so that of duplicate keys (possible in pdata, not in JSON) the last value wins, as in JSON.
	slices.SortStableFunc(b.order, func(i, j int) int { return strings.Compare(b.keys[i], b.keys[j]) })
	// pcommon.Map has no way to reorder in place: move the values into a new map in order, then move that back.
	sorted := pcommon.NewMap()
	sorted.EnsureCapacity(len(b.order))
	for _, i := range b.order {
		b.values[i].MoveTo(sorted.PutEmpty(b.keys[i]))
	}
	sorted.MoveTo(m)
}

func keysSorted(m pcommon.Map) bool {
	prev := ""
	for k := range m.All() {
		if k < prev {
			return false
		}
		prev = k
	}
	return true
}
