// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// benchBatches are batches of 1,000 PSS-shaped results (19 policies, 50 namespaces) or decisions, each results
// batch in two versions whose outcomes differ.
func benchBatches(n int, decisions bool) [][2]plog.Logs {
	out := make([][2]plog.Logs, n)
	for i := range out {
		for v := range 2 {
			items := make([]any, 0, 1000)
			for j := range 1000 {
				r := i*1000 + j
				policy := fmt.Sprintf("pss-%d", r%19)
				if decisions {
					items = append(items, decision("bench", policy, r%3 == 0, policyresult.ActionDeny))
					continue
				}
				o := []policyresult.Outcome{policyresult.OutcomePass, policyresult.OutcomeFail}[(r+v)%2]
				items = append(items, result("bench", policy, fmt.Sprintf("ns-%d", r/19%50), fmt.Sprintf("pod-%d", r/19), o, policyresult.StateChanged))
			}
			out[i][v] = batch(items...)
		}
	}
	return out
}

func benchmarkConnector(b *testing.B, decisions bool) {
	cfg := createDefaultConfig().(*Config)
	cfg.Results.Labels = append(cfg.Results.Labels, policyresult.AttrResourceNamespace)
	c, err := NewFactory().CreateLogsToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(b, err)
	require.NoError(b, c.Start(context.Background(), nil))
	defer func() { require.NoError(b, c.Shutdown(context.Background())) }()
	batches := benchBatches(20, decisions)
	b.ResetTimer()
	for i := range b.N {
		if err := c.ConsumeLogs(context.Background(), batches[i%len(batches)][i/len(batches)%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkResults measures batches of 1,000 result records counted into gauges by source, policy and
// namespace.
func BenchmarkResults(b *testing.B) { benchmarkConnector(b, false) }

// BenchmarkDecisions measures batches of 1,000 decision records counted by source, policy and action.
func BenchmarkDecisions(b *testing.B) { benchmarkConnector(b, true) }
