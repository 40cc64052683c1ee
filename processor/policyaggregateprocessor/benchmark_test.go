// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

// benchBatches are batches of 1,000 PSS-shaped results (19 policies per pod, 50 namespaces), each in two
// versions whose outcomes differ, so that every batch after the first changes counts.
func benchBatches(n int) [][2]plog.Logs {
	out := make([][2]plog.Logs, n)
	for i := range out {
		for v := range 2 {
			rs := make([]policyresult.Result, 0, 1000)
			for j := range 1000 {
				r := i*1000 + j
				o := []policyresult.Outcome{policyresult.OutcomePass, policyresult.OutcomeFail}[(r+v)%2]
				rs = append(rs, result("bench", fmt.Sprintf("pss-%d", r%19), fmt.Sprintf("ns-%d", r/19%50),
					fmt.Sprintf("pod-%d", r/19), o, policyresult.StateChanged))
			}
			out[i][v] = logs(rs...)
		}
	}
	return out
}

func benchmarkAggregate(b *testing.B, cfg *Config, host component.Host) {
	lp, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(b, err)
	require.NoError(b, lp.Start(context.Background(), host))
	defer func() { require.NoError(b, lp.Shutdown(context.Background())) }()
	batches := benchBatches(20)
	b.ResetTimer()
	for i := range b.N {
		if err := lp.ConsumeLogs(context.Background(), batches[i%len(batches)][i/len(batches)%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkAggregate measures batches of 1,000 result records through the processor (results forwarded).
func BenchmarkAggregate(b *testing.B) {
	cfg := createDefaultConfig().(*Config)
	benchmarkAggregate(b, cfg, componenttest.NewNopHost())
}

// BenchmarkAggregateStorage adds a file_storage extension: every batch writes the groups it changed.
func BenchmarkAggregateStorage(b *testing.B) {
	cfg := createDefaultConfig().(*Config)
	cfg.Storage = &storageID
	host := filestoragetest.NewHost(b, b.TempDir())
	defer func() { _ = host.Ext.Shutdown(context.Background()) }()
	benchmarkAggregate(b, cfg, host)
}

// BenchmarkMemoryPerMillionKeys fills the state with one million keys in 19,000 groups and reports the heap it
// holds.
func BenchmarkMemoryPerMillionKeys(b *testing.B) {
	cfg := createDefaultConfig().(*Config)
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tl := resultstate.New(cfg.GroupBy, cfg.MaxKeys)
		values := make([]string, len(cfg.GroupBy))
		for i := range 1_000_000 {
			r := result("bench", fmt.Sprintf("pss-%d", i%19), fmt.Sprintf("ns-%d", i/19%1000),
				fmt.Sprintf("pod-%d", i/19), policyresult.OutcomePass, policyresult.StateNew)
			k := r.Hashes().Key
			values[0], values[1], values[2], values[3] = r.Cluster, r.Source, r.Policy, r.Resource.Namespace
			tl.Set(k, values, r.Outcome)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "MB/1Mkeys")
		runtime.KeepAlive(tl)
	}
}
