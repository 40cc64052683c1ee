// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// BenchmarkEncode measures the exporter's own work per batch, without the network or a server: converting
// 5,000 records, splitting them into requests of 1,000 and encoding the requests as gRPC does.
// testbed/resultsgrpc measures the whole path into the reference server.
func BenchmarkEncode(b *testing.B) {
	const n = 5000
	ld := resultbatch.Logs(0, n, 0)
	meta := map[string]string{"environment": "production"}
	var bytes int
	for b.Loop() {
		batch := convert(ld, defaultMaxRequestBytes)
		bytes = 0
		for _, s := range split(batch.sizes, defaultMaxResultsPerRequest, defaultMaxRequestBytes) {
			out, err := proto.Marshal(&pb.ForwardRequest{Results: batch.results[s.start:s.end], ExtraMetadata: meta})
			if err != nil {
				b.Fatal(err)
			}
			bytes += len(out)
		}
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(bytes)/n, "bytes/record")
}
