// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkConsumeLogs writes batches of 1,000 policy results; records/s is reported per sync setting.
func BenchmarkConsumeLogs(b *testing.B) {
	for _, sync := range []bool{true, false} {
		name := "sync"
		if !sync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.Path = filepath.Join(b.TempDir(), "results.jsonl")
			cfg.Sync = sync
			cfg.Rotation.MaxMegabytes = 0
			exp := startExporter(b, cfg)
			ld := resultLogs(1000, "privileged mode is disallowed")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				require.NoError(b, exp.ConsumeLogs(context.Background(), ld))
			}
			b.ReportMetric(float64(b.N*ld.LogRecordCount())/b.Elapsed().Seconds(), "records/s")
		})
	}
}
