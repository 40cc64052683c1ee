// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filebaseline"
)

// benchBatch is the batch size of the benchmarks: a sending_queue batch of PSS results (about 1.2 KB each as a
// line, with the engine's result as body).
const benchBatch = 5000

func benchLogs() plog.Logs {
	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, benchBatch)
	return ld
}

// BenchmarkS3Export measures records/s into a local MinIO with each format and compression, the bytes stored
// per record and the bytes allocated per batch (what a batch costs in memory at most); the contrib file exporter
// writes the same records in the same run, for comparison.
func BenchmarkS3Export(b *testing.B) {
	srv := startMinIO(b)
	for _, f := range []struct{ name, format, compression string }{
		{CompressionGzip, FormatNDJSON, CompressionGzip},
		{CompressionZstd, FormatNDJSON, CompressionZstd},
		{CompressionNone, FormatNDJSON, CompressionNone},
		{"parquet+zstd", FormatParquet, CompressionZstd},
		{"parquet+snappy", FormatParquet, CompressionSnappy},
	} {
		b.Run("s3/"+f.name, func(b *testing.B) {
			cfg := testConfig(srv)
			cfg.Format = f.format
			cfg.S3Uploader.Compression = f.compression
			cfg.S3Uploader.S3Prefix = f.name
			exp := startExporter(b, cfg, nil)
			ld := benchLogs()
			ld.MarkReadOnly()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "records/s")
			var stored int64
			for _, o := range listObjects(b, srv.Client()) {
				if filepath.Dir(filepath.Dir(filepath.Dir(o.key))) == f.name {
					stored = o.size // every iteration overwrites the same object
				}
			}
			require.NotZero(b, stored)
			b.ReportMetric(float64(stored)/benchBatch, "bytes/record")
		})
	}
	ld := benchLogs()
	ld.MarkReadOnly()
	filebaseline.Run(b, ld, benchBatch)
}
