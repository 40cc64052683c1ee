// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadatatest"
)

// mixedBatch is a batch as a pipeline carries it: a decision with an AdmissionReview, a report result (no
// object), and a record whose body is text. Only bodies are touched, so resource and attributes are set to
// see that they come out as they went in.
func mixedBatch(t *testing.T, decisionBody string) plog.Logs {
	ld := logsWithBodies(t, decisionBody, "records/result_entry.json", "string_body/input.json")
	rl := ld.ResourceLogs().At(0)
	rl.Resource().Attributes().PutStr(policyresult.AttrClusterName, "prod-eu-1")
	records := rl.ScopeLogs().At(0).LogRecords()
	records.At(0).Attributes().PutStr(policyresult.AttrEventName, policyresult.EventDecision)
	records.At(0).Attributes().PutStr(policyresult.AttrResourceUID, "4f1c2b0e-9f5d-4d4e-8a77-1e2d3c4b5a69")
	records.At(1).Attributes().PutStr(policyresult.AttrEventName, policyresult.EventResult)
	return ld
}

func TestProcessorBatches(t *testing.T) {
	tp := newTestProcessor(t, createDefaultConfig().(*Config))
	require.True(t, tp.Capabilities().MutatesData)

	for range 2 {
		got := tp.process(t, mixedBatch(t, "opa_decision/input.json"))
		requireSameEncoding(t, mixedBatch(t, "opa_decision/expected.json"), got)
	}

	// Two batches of one decision with two objects, 5 fields each.
	metadatatest.AssertEqualProcessorK8sMetadataStripObjects(t, tp.telemetry,
		[]metricdata.DataPoint[int64]{{Value: 4}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorK8sMetadataStripFields(t, tp.telemetry,
		[]metricdata.DataPoint[int64]{{Value: 20}}, metricdatatest.IgnoreTimestamp())
}

// TestProcessorConcurrentBatches: the pipeline calls ConsumeLogs from several goroutines at once (run with -race).
func TestProcessorConcurrentBatches(t *testing.T) {
	tp := newTestProcessor(t, createDefaultConfig().(*Config))
	want := mixedBatch(t, "opa_decision/expected.json")
	const goroutines, batches = 4, 25

	var wg sync.WaitGroup
	for range goroutines {
		inputs := make([]plog.Logs, batches)
		for i := range inputs {
			inputs[i] = mixedBatch(t, "opa_decision/input.json")
		}
		wg.Go(func() {
			for _, ld := range inputs {
				if err := tp.ConsumeLogs(context.Background(), ld); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()

	require.Equal(t, goroutines*batches, len(tp.sink.AllLogs()))
	for _, got := range tp.sink.AllLogs() {
		requireSameEncoding(t, want, got)
	}
	metadatatest.AssertEqualProcessorK8sMetadataStripObjects(t, tp.telemetry,
		[]metricdata.DataPoint[int64]{{Value: 2 * goroutines * batches}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorK8sMetadataStripFields(t, tp.telemetry,
		[]metricdata.DataPoint[int64]{{Value: 10 * goroutines * batches}}, metricdatatest.IgnoreTimestamp())
}
