// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadata"
)

// BenchmarkStrip measures records per second through the processor, in batches of the size the decision_logs
// receiver sends: decisions whose body is an OPA event with the AdmissionReview of a Pod with managedFields
// (4.3 KB of JSON), and report results whose body holds no object. One op is one record.
func BenchmarkStrip(b *testing.B) {
	const batchSize = 500
	for _, bb := range []struct {
		name, body, event string
		sortKeys          bool
	}{
		{name: "decision", body: "records/decision_pod.json", event: policyresult.EventDecision, sortKeys: true},
		{name: "decision_sort_keys_off", body: "records/decision_pod.json", event: policyresult.EventDecision},
		{name: "result", body: "records/result_entry.json", event: policyresult.EventResult, sortKeys: true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.SortKeys = bb.sortKeys
			p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, p.Shutdown(context.Background())) })

			template := logsWithBodies(b, bb.body).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
			template.Attributes().PutStr(policyresult.AttrEventName, bb.event)
			// The processor strips in place, so every op needs a fresh record; copying is left out of the timing.
			batch := func(n int) plog.Logs {
				ld := plog.NewLogs()
				records := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
				records.EnsureCapacity(n)
				for range n {
					template.CopyTo(records.AppendEmpty())
				}
				return ld
			}

			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(batchSize, b.N-done)
				b.StopTimer()
				ld := batch(n)
				b.StartTimer()
				if err := p.ConsumeLogs(context.Background(), ld); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
