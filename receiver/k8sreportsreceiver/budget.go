// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"encoding/json"
	"fmt"
)

// reportBudget is the most one report may fan out to. The API server bounds an object (etcd takes at most
// about 1.5 MB), but not what it fans out to: one result listing N subjects is N records, and a report of
// small entries is hundreds of thousands of them.
type reportBudget struct {
	records int
	bytes   int64
}

// reportSize is what a report fans out to: records, and the bytes of their bodies as JSON.
type reportSize struct {
	records int
	bytes   int64
}

func (b reportBudget) fits(s reportSize) bool { return s.records <= b.records && s.bytes <= b.bytes }

// fanout is a parser's count of what it builds, checked before it builds it. Past the budget the parser
// builds nothing more but keeps counting, so that the fault says how large the report is; and a later,
// larger budget can tell from the stored size whether the report now fits.
type fanout struct {
	budget reportBudget
	size   reportSize
}

// add counts records with bodies of bytes in all; false once the report no longer fits.
func (f *fanout) add(records int, bytes int64) bool {
	f.size.records += records
	f.size.bytes += bytes
	return f.budget.fits(f.size)
}

// addEntries counts a list of entries that are one record each, with the entry as the body.
func (f *fanout) addEntries(entries []json.RawMessage) bool {
	var bytes int64
	for _, e := range entries {
		bytes += int64(len(e))
	}
	return f.add(len(entries), bytes)
}

// capacity is how many results to allocate for n entries of at least one record each: none when that is
// already over the budget, as nothing will be built.
func (f *fanout) capacity(n int) int {
	if n > f.budget.records {
		return 0
	}
	return n
}

// err is the too-large fault once the report went over the budget.
func (f *fanout) err() error {
	if f.budget.fits(f.size) {
		return nil
	}
	return &tooLargeError{size: f.size, budget: f.budget}
}

// tooLargeError is a report that fans out to more than the budget allows; it is skipped, not read in part.
type tooLargeError struct {
	size   reportSize
	budget reportBudget
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("too large: %d records with %d bytes of bodies (max_report_records %d, max_report_bytes %d)",
		e.size.records, e.size.bytes, e.budget.records, e.budget.bytes)
}
