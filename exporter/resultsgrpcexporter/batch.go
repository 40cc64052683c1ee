// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/otelcol-policy/otelcol-policy/internal/logsubset"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// batch is a plog batch converted for the API: the results in record order, where each came from, and what
// could not be sent.
type batch struct {
	results []*pb.Result
	locs    []logsubset.Location
	// sizes are the encoded sizes of the results as elements of ForwardRequest.results.
	sizes []int
	// skipped counts records of other events; invalid counts results that cannot be sent, of which
	// firstInvalid says why.
	skipped, invalid int
	firstInvalid     error
}

var errTooLarge = errors.New("result larger than max_request_bytes")

// convert converts every policy.result record of ld. A record of another event is skipped; a result the
// conversion refuses (a key that no longer matches its identity, a value outside the vocabulary) or too large
// to fit any request is invalid: retrying would fail the same way.
func convert(ld plog.Logs, maxRequestBytes int) batch {
	n := ld.LogRecordCount()
	b := batch{results: make([]*pb.Result, 0, n), locs: make([]logsubset.Location, 0, n), sizes: make([]int, 0, n)}
	rls := ld.ResourceLogs()
	for ri := range rls.Len() {
		res := rls.At(ri).Resource()
		sls := rls.At(ri).ScopeLogs()
		for si := range sls.Len() {
			lrs := sls.At(si).LogRecords()
			for li := range lrs.Len() {
				r, err := resultsapi.FromLogRecord(res, lrs.At(li))
				if errors.Is(err, policyresult.ErrNotResult) {
					b.skipped++
					continue
				}
				var size int
				if err == nil {
					size = elementSize(r)
					if size > maxRequestBytes {
						err = fmt.Errorf("%w: %s is %d bytes, max_request_bytes is %d", errTooLarge, r.GetKey(), size, maxRequestBytes)
					}
				}
				if err != nil {
					if b.invalid == 0 {
						b.firstInvalid = err
					}
					b.invalid++
					continue
				}
				b.results = append(b.results, r)
				b.locs = append(b.locs, logsubset.Location{RI: ri, SI: si, LI: li})
				b.sizes = append(b.sizes, size)
			}
		}
	}
	return b
}

// elementSize is what r adds to a ForwardRequest: field 1's tag, the length and the message.
func elementSize(r *pb.Result) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(r))
}

// span is one request: results[start:end].
type span struct{ start, end int }

// split cuts the results into requests of at most maxResults results and maxBytes bytes of results, in order.
// Every size is at most maxBytes (convert dropped larger results), so every request holds at least one.
func split(sizes []int, maxResults, maxBytes int) []span {
	var spans []span
	start, bytes := 0, 0
	for i, size := range sizes {
		if i > start && (i-start == maxResults || bytes+size > maxBytes) {
			spans = append(spans, span{start, i})
			start, bytes = i, 0
		}
		bytes += size
	}
	if start < len(sizes) {
		spans = append(spans, span{start, len(sizes)})
	}
	return spans
}
