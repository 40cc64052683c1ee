// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package logsubset copies chosen records of a batch into a new batch, for exporters that hand the records of a
// partly failed batch back to exporterhelper (consumererror.NewLogs) so that only those are retried.
package logsubset // import "github.com/otelcol-policy/otelcol-policy/internal/logsubset"

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/plog"
)

// Location is a record's position in a batch: resource, scope and record index.
type Location struct{ RI, SI, LI int }

func compare(a, b Location) int {
	return cmp.Or(cmp.Compare(a.RI, b.RI), cmp.Compare(a.SI, b.SI), cmp.Compare(a.LI, b.LI))
}

// Subset copies the records at locs, in batch order whatever the order of locs, keeping their resources and
// scopes.
func Subset(ld plog.Logs, locs []Location) plog.Logs {
	if !slices.IsSortedFunc(locs, compare) {
		locs = slices.SortedFunc(slices.Values(locs), compare)
	}
	out := plog.NewLogs()
	var rl plog.ResourceLogs
	var sl plog.ScopeLogs
	last := Location{-1, -1, -1}
	for _, l := range locs {
		src := ld.ResourceLogs().At(l.RI)
		if l.RI != last.RI {
			rl = out.ResourceLogs().AppendEmpty()
			src.Resource().CopyTo(rl.Resource())
			rl.SetSchemaUrl(src.SchemaUrl())
		}
		srcScope := src.ScopeLogs().At(l.SI)
		if l.RI != last.RI || l.SI != last.SI {
			sl = rl.ScopeLogs().AppendEmpty()
			srcScope.Scope().CopyTo(sl.Scope())
			sl.SetSchemaUrl(srcScope.SchemaUrl())
		}
		srcScope.LogRecords().At(l.LI).CopyTo(sl.LogRecords().AppendEmpty())
		last = l
	}
	return out
}
