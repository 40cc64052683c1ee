// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"fmt"

	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// refusalsSource is the status source of the reports skipped as too large.
const refusalsSource = "too_large"

// refusals are the reports whose latest version was skipped as too large, as committed. While there are any,
// the status is a recoverable error naming one of them; it clears when each was deleted or replaced by a
// version that fits. What survives a restart is each report's emitted state (emittedReport.refused).
type refusals struct {
	problems *problems
	sizes    map[objKey]parse.Size
	latest   objKey
}

func newRefusals(p *problems) *refusals {
	return &refusals{problems: p, sizes: map[objKey]parse.Size{}}
}

// update takes note of a report's committed state (nil: the report is gone).
func (f *refusals) update(k objKey, e *emittedReport) {
	if e != nil && e.refused != nil {
		f.sizes[k], f.latest = e.refused.size, k
	} else if _, had := f.sizes[k]; had {
		delete(f.sizes, k)
	} else {
		return
	}
	f.report()
}

func (f *refusals) report() {
	if len(f.sizes) == 0 {
		f.problems.clearSource(refusalsSource)
		return
	}
	size, ok := f.sizes[f.latest]
	if !ok {
		for f.latest, size = range f.sizes {
			break
		}
	}
	f.problems.hold(refusalsSource, fmt.Errorf("%d report(s) skipped as too large to process, e.g. %s: %d records with %d bytes of bodies",
		len(f.sizes), f.latest, size.Records, size.Bytes))
}

// reset forgets every report: the receiver stopped leading.
func (f *refusals) reset() {
	clear(f.sizes)
	f.problems.clearSource(refusalsSource)
}
