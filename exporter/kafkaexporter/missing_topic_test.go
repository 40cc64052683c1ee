// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/kafkatest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const (
	logTopicMissing = "Kafka topic does not exist"
	logTopicExists  = "Kafka topic exists now"
)

// observedExporter starts an exporter whose logs and self-metrics the test reads.
func observedExporter(t *testing.T, cfg *Config) (exporter.Logs, *observer.ObservedLogs, *componenttest.Telemetry) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zapcore.InfoLevel)
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp, logs, tt
}

// byAttribute is an int metric's value by one attribute; empty when the metric has no points.
func byAttribute(tt *componenttest.Telemetry, name, key string) map[string]int64 {
	out := map[string]int64{}
	m, err := tt.GetMetric(name)
	if err != nil {
		return out
	}
	var dps []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		dps = d.DataPoints
	case metricdata.Sum[int64]:
		dps = d.DataPoints
	}
	for _, dp := range dps {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		out[v.AsString()] = dp.Value
	}
	return out
}

// missingGauge is the exporter_kafka_missing_topic_records gauge by topic; empty when nothing waits.
func missingGauge(tt *componenttest.Telemetry) map[string]int64 {
	return byAttribute(tt, "otelcol_exporter_kafka_missing_topic_records", "topic")
}

// errorsByReason is the exporter_kafka_errors counter by reason.
func errorsByReason(tt *componenttest.Telemetry) map[string]int64 {
	return byAttribute(tt, "otelcol_exporter_kafka_errors", "reason")
}

// (a) Kafka's default: the broker creates a topic when a producer asks for its metadata.
func TestMissingTopicIsAutoCreated(t *testing.T) {
	c := newCluster(t, kfake.AllowAutoTopicCreation())
	cfg := syncConfig(c)
	cfg.Logs.Topic = "created-on-first-use"
	require.True(t, cfg.Producer.AllowAutoTopicCreation, "the default")
	exp := startExporter(t, cfg)

	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(20, "auto")))
	keys := map[string]bool{}
	for _, r := range consume(t, c.ListenAddrs(), 20, "created-on-first-use") {
		keys[string(r.Key)] = true
	}
	assert.Len(t, keys, 20)
}

// producer::allow_auto_topic_creation: false reaches the client: a broker that would create the topic does not,
// and the records wait (a retryable error) instead of being dropped.
func TestAutoTopicCreationOff(t *testing.T) {
	c := newCluster(t, kfake.AllowAutoTopicCreation())
	cfg := syncConfig(c)
	cfg.Logs.Topic = "not-created"
	cfg.Producer.AllowAutoTopicCreation = false
	exp, logs, tt := observedExporter(t, cfg)

	err := exp.ConsumeLogs(context.Background(), resultLogs(3, "wait"))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), `3 of 3 records not acknowledged by Kafka: topic "not-created"`)
	assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	assert.False(t, kafkatest.TopicExists(t, c.ListenAddrs(), "not-created"))

	warnings := logs.FilterMessageSnippet(logTopicMissing).All()
	require.Len(t, warnings, 1)
	assert.Equal(t, zapcore.WarnLevel, warnings[0].Level)
	assert.Equal(t, "not-created", warnings[0].ContextMap()["topic"])
	assert.Equal(t, false, warnings[0].ContextMap()["allow_auto_topic_creation"])
	assert.Equal(t, map[string]int64{"not-created": 3}, missingGauge(tt))
	assert.Equal(t, map[string]int64{reasonUnknownTopic: 3}, errorsByReason(tt))
}

// (b) The broker does not create topics; an operator creates the topic after the exporter started. Every record
// accepted meanwhile waits in the queue and arrives once, after the topic appears; the operator is told which
// topic is missing until then.
func TestTopicCreatedLater(t *testing.T) {
	const topic = "created-later"
	c := newCluster(t)
	cfg := queuedConfig(c.ListenAddrs())
	cfg.Logs.Topic = topic
	exp, logs, tt := observedExporter(t, cfg)

	const batches, perBatch = 10, 10
	sent := map[string]bool{}
	for b := range batches {
		ld := resultLogs(0, "")
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := range perBatch {
			r := testResult(b*perBatch+i, "kyverno", "waits for its topic")
			policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
			sent[r.Key()] = true
		}
		require.NoError(t, exp.ConsumeLogs(context.Background(), ld), "the queue accepts every batch")
	}

	// The signal that records wait: the warning and the gauge, after at least two failed attempts.
	require.Eventually(t, func() bool {
		w := logs.FilterMessageSnippet(logTopicMissing).All()
		return len(w) > 0 && w[0].ContextMap()["topic"] == topic && missingGauge(tt)[topic] > 0 &&
			errorsByReason(tt)[reasonUnknownTopic] >= 2*perBatch
	}, 30*time.Second, 20*time.Millisecond)
	assert.Len(t, logs.FilterMessageSnippet(logTopicMissing).All(), 1, "one warning a minute")
	assert.False(t, kafkatest.TopicExists(t, c.ListenAddrs(), topic))

	kafkatest.CreateTopic(t, c.ListenAddrs(), topic, 3)

	got := consumeKeys(t, c.ListenAddrs(), topic, sent)
	missing := 0
	for k := range sent {
		if got[k] == 0 {
			missing++
		}
	}
	assert.Zero(t, missing, "records lost")
	assert.Len(t, got, len(sent), "only the records sent arrive")
	assert.Zero(t, duplicates(got), "nothing was written before the topic existed")

	require.Eventually(t, func() bool { return len(logs.FilterMessageSnippet(logTopicExists).All()) == 1 },
		10*time.Second, 20*time.Millisecond)
	assert.Equal(t, topic, logs.FilterMessageSnippet(logTopicExists).All()[0].ContextMap()["topic"])
	assert.Empty(t, missingGauge(tt), "nothing waits once the topic exists")
	assert.Zero(t, errorsByReason(tt)[reasonTooLarge]+errorsByReason(tt)[reasonInvalidTopic])
}

// A topic deleted and created again has a new ID, which franz-go does not adopt by itself: the exporter makes it
// forget the old one, and the retry reaches the new topic.
func TestRecreatedTopic(t *testing.T) {
	const topic = "recreated"
	c := newCluster(t, kfake.SeedTopics(1, topic))
	cfg := queuedConfig(c.ListenAddrs())
	cfg.Logs.Topic = topic
	exp, _, _ := observedExporter(t, cfg)

	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(5, "before")))
	consume(t, c.ListenAddrs(), 5, topic)
	kafkatest.DeleteTopic(t, c.ListenAddrs(), topic)
	kafkatest.CreateTopic(t, c.ListenAddrs(), topic, 1)

	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(5, "after")))
	for _, r := range consume(t, c.ListenAddrs(), 5, topic) {
		assert.Contains(t, string(r.Value), `"after"`)
	}
}

func TestMissingTopicsAreBounded(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	m := newMissingTopics(zap.New(core), true)
	now := time.Unix(0, 0)
	m.now = func() time.Time { return now }

	waiting := map[string]int{}
	for i := range maxMissingTopics + 10 {
		waiting[fmt.Sprintf("topic-%03d", i)] = 1
	}
	m.update(waiting, nil)
	assert.Len(t, m.topics, maxMissingTopics+1)
	assert.Equal(t, 10, m.topics[otherMissingTopics].records)
	assert.Len(t, logs.FilterMessageSnippet(logTopicMissing).All(), maxMissingTopics+1)

	// Again within the minute: no new warning; a minute later: one a topic.
	now = now.Add(30 * time.Second)
	m.update(waiting, nil)
	assert.Len(t, logs.FilterMessageSnippet(logTopicMissing).All(), maxMissingTopics+1)
	now = now.Add(30 * time.Second)
	m.update(waiting, nil)
	assert.Len(t, logs.FilterMessageSnippet(logTopicMissing).All(), 2*(maxMissingTopics+1))

	// Delivering to a tracked topic ends it; the others beyond the bound end once an attempt delivers without
	// any of them waiting.
	delete(waiting, "topic-000")
	m.update(waiting, map[string]bool{"topic-000": true})
	assert.NotContains(t, m.topics, "topic-000")
	assert.Contains(t, m.topics, otherMissingTopics)
	assert.NotContains(t, m.topics, "topic-070", "beyond the bound")
	m.update(nil, map[string]bool{"topic-070": true})
	assert.NotContains(t, m.topics, otherMissingTopics)
	found := logs.FilterMessageSnippet(logTopicExists).All()
	require.Len(t, found, 1)
	assert.Equal(t, "topic-000", found[0].ContextMap()["topic"])
}
