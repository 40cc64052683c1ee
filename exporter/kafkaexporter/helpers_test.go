// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const testTopic = "policy-results"

func newCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, testTopic)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// syncConfig is a configuration whose ConsumeLogs returns the outcome of one attempt: no queue, no retry.
func syncConfig(c *kfake.Cluster) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Brokers = c.ListenAddrs()
	cfg.Logs.Topic = testTopic
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	return cfg
}

func startExporter(t testing.TB, cfg *Config) exporter.Logs {
	t.Helper()
	require.NoError(t, cfg.Validate())
	exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp
}

// consume reads want records from the topics, from their start, and fails the test when fewer arrive.
func consume(t testing.TB, addrs []string, want int, topics ...string) []*kgo.Record {
	t.Helper()
	return consumeWith(t, []kgo.Opt{kgo.SeedBrokers(addrs...)}, want, topics...)
}

func consumeWith(t testing.TB, opts []kgo.Opt, want int, topics ...string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		require.NoError(t, fs.Err())
		out = append(out, fs.Records()...)
	}
	require.Len(t, out, want, "records consumed from %v", topics)
	return out
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func testResult(i int, source, message string) policyresult.Result {
	return policyresult.Result{
		Cluster: "test-cluster", Source: source, Policy: "require-labels", Rule: "check-team",
		Severity: policyresult.SeverityMedium, Outcome: policyresult.OutcomeFail, Message: message,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d", i)},
		State:    policyresult.StateNew,
	}
}

// resultLogs holds n results of one cluster; result i is about pod-<i>.
func resultLogs(n int, message string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "test-cluster")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		r := testResult(i, "kyverno", message)
		policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
	}
	return ld
}

// appendSummary adds a summary record (keyed by policy.summary.key, no result key) to the first scope.
func appendSummary(ld plog.Logs, key string) plog.LogRecord {
	lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	lr.SetEventName(policyresult.EventSummary)
	lr.Attributes().PutStr(policyresult.AttrEventName, policyresult.EventSummary)
	lr.Attributes().PutStr(policyresult.AttrSummaryKey, key)
	lr.Attributes().PutInt(policyresult.AttrSummaryFail, 2)
	return lr
}

// appendDecision adds a decision record, which has a decision ID and no result key.
func appendDecision(ld plog.Logs, id string) plog.LogRecord {
	lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	allowed := false
	policyresult.WriteDecisionLogRecord(&policyresult.Decision{ID: id, Kind: policyresult.DecisionKindAdmission,
		Source: "gatekeeper", Policy: "K8sRequiredLabels", Rule: "must-have-team", Allowed: &allowed,
		Action: policyresult.ActionDeny, Messages: []string{"missing label team"}}, lr)
	return lr
}

func resultKey(i int) string {
	r := testResult(i, "kyverno", "")
	return r.Key()
}

func strAttr(m pcommon.Map, k string) string {
	v, _ := m.Get(k)
	return v.AsString()
}

func configOpaque(s string) configopaque.String { return configopaque.String(s) }

func exportertestSettings() exporter.Settings { return exportertest.NewNopSettings(metadata.Type) }
