// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package filebaseline benchmarks the contrib file exporter on the batch an exporter benchmark writes, so that
// every exporter's numbers stand next to the same baseline measured in the same run.
package filebaseline // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/filebaseline"

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Run adds sub-benchmarks file/json and file/json+zstd writing ld (of records log records) with the contrib file
// exporter, reporting records/s and bytes/record on disk.
func Run(b *testing.B, ld plog.Logs, records int) {
	for _, compression := range []string{"", "zstd"} {
		name := "file/json"
		if compression != "" {
			name += "+" + compression
		}
		b.Run(name, func(b *testing.B) {
			f := fileexporter.NewFactory()
			cfg := f.CreateDefaultConfig().(*fileexporter.Config)
			cfg.Path = filepath.Join(b.TempDir(), "out.json")
			cfg.Compression = compression
			cfg.Rotation = nil // one file holds everything written
			exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
			require.NoError(b, err)
			require.NoError(b, exp.Start(context.Background(), componenttest.NewNopHost()))
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
					b.Fatal(err)
				}
			}
			// The file exporter buffers: its shutdown flush is part of the work.
			require.NoError(b, exp.Shutdown(context.Background()))
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N*records)/elapsed.Seconds(), "records/s")
			st, err := os.Stat(cfg.Path)
			require.NoError(b, err)
			b.ReportMetric(float64(st.Size())/float64(b.N*records), "bytes/record")
		})
	}
}
