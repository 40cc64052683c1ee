// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3query

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchInput is 1,000,000 records: 800,000 results and the later records of 200,000 of them.
var benchInput = input{n: 800_000}

// BenchmarkS3Query writes benchInput through the s3 exporter (batches of 10,000, partitioned by cluster and hour)
// into MinIO in each format, copies the objects to local disk, checks DuckDB's answers against the input, then
// times the two queries, each reading every object again:
//
//	bytes/result  the objects' bytes (as stored in MinIO) per record
//	findings-ms   "every CVSS ≥ 8 finding with a fix, per cluster"
//	failing-ms    "failing results per policy"
//
// Writing and copying take a minute or two per format and are not timed; run it with -benchtime 3x -count 1.
func BenchmarkS3Query(b *testing.B) {
	srv := startMinIO(b)
	wantFindings, wantFailing := benchInput.want()
	ctx := context.Background()
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			benchInput.batches(10_000, exporter(b, srv, f))
			dir := b.TempDir()
			objects, bytes, err := download(ctx, srv.Client(), bucket, f.name+"/", dir)
			require.NoError(b, err)
			db := openDuckDB(b)
			_, err = db.ExecContext(ctx, f.view(filepath.Join(dir, f.name)))
			require.NoError(b, err)
			// A benchmark of wrong answers measures nothing.
			requireAnswers(b, db, wantFindings, wantFailing)

			var findingsTime, failingTime time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if _, err := findings(ctx, db); err != nil {
					b.Fatal(err)
				}
				findingsTime += time.Since(start)
				start = time.Now()
				if _, err := failingPerPolicy(ctx, db); err != nil {
					b.Fatal(err)
				}
				failingTime += time.Since(start)
			}
			b.ReportMetric(float64(bytes)/float64(benchInput.records()), "bytes/result")
			b.ReportMetric(float64(findingsTime.Milliseconds())/float64(b.N), "findings-ms")
			b.ReportMetric(float64(failingTime.Milliseconds())/float64(b.N), "failing-ms")
			b.ReportMetric(float64(objects), "objects")
		})
	}
}
