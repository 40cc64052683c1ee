// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"fmt"
)

// Budget is the most one report may fan out to. The API server bounds an object (etcd takes at most
// about 1.5 MB), but not what it fans out to: one result listing N subjects is N records, and a report of
// small entries is hundreds of thousands of them.
type Budget struct {
	Records int
	Bytes   int64
}

// Size is what a report fans out to: records, and the bytes of their bodies as JSON.
type Size struct {
	Records int
	Bytes   int64
}

func (b Budget) Fits(s Size) bool { return s.Records <= b.Records && s.Bytes <= b.Bytes }

// fanout is a parser's count of what it builds, checked before it builds it. Past the budget the parser
// builds nothing more but keeps counting, so that the fault says how large the report is; and a later,
// larger budget can tell from the stored size whether the report now fits.
type fanout struct {
	budget Budget
	size   Size
}

// add counts records with bodies of bytes in all; false once the report no longer fits.
func (f *fanout) add(records int, bytes int64) bool {
	f.size.Records += records
	f.size.Bytes += bytes
	return f.budget.Fits(f.size)
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
	if n > f.budget.Records {
		return 0
	}
	return n
}

// err is the too-large fault once the report went over the budget.
func (f *fanout) err() error {
	if f.budget.Fits(f.size) {
		return nil
	}
	return &TooLargeError{Size: f.size, Budget: f.budget}
}

// TooLargeError is a report that fans out to more than the budget allows; it is skipped, not read in part.
type TooLargeError struct {
	Size   Size
	Budget Budget
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("too large: %d records with %d bytes of bodies (max_report_records %d, max_report_bytes %d)",
		e.Size.Records, e.Size.Bytes, e.Budget.Records, e.Budget.Bytes)
}
