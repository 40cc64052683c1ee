// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/kafkatest"
)

// TestTopicAllowlist: a record whose topic_from_attribute names a listed topic goes there; one naming any other
// topic (one the brokers would create on first use, Kafka's own __consumer_offsets) goes to logs::topic and is
// counted, and the brokers create no topic for it, nor does it show as a missing topic. The warning names the
// first such topic, once a minute whatever the number of batches.
func TestTopicAllowlist(t *testing.T) {
	const decisions = "policy-decisions"
	c := newCluster(t, kfake.SeedTopics(1, decisions), kfake.AllowAutoTopicCreation())
	cfg := syncConfig(c)
	cfg.TopicFromAttribute = "kafka.topic"
	cfg.TopicAllowlist = []string{decisions}
	require.True(t, cfg.Producer.AllowAutoTopicCreation)
	exp, logs, tel := observedExporter(t, cfg)

	for range 2 {
		ld := resultLogs(3, "routed")
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		lrs.At(0).Attributes().PutStr("kafka.topic", decisions)
		lrs.At(1).Attributes().PutStr("kafka.topic", "attacker-topic")
		lrs.At(2).Attributes().PutStr("kafka.topic", "__consumer_offsets")
		require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	}

	for _, r := range consume(t, c.ListenAddrs(), 2, decisions) {
		assert.Equal(t, resultKey(0), string(r.Key))
	}
	keys := map[string]int{}
	for _, r := range consume(t, c.ListenAddrs(), 4, testTopic) {
		keys[string(r.Key)]++
	}
	assert.Equal(t, map[string]int{resultKey(1): 2, resultKey(2): 2}, keys)
	assert.False(t, kafkatest.TopicExists(t, c.ListenAddrs(), "attacker-topic"), "no topic is created for a name outside the list")
	assert.Empty(t, missingGauge(tel))

	m, err := tel.GetMetric("otelcol_exporter_kafka_topic_not_allowed_records")
	require.NoError(t, err)
	assert.Equal(t, int64(4), byAttribute(tel, m.Name, "")[""])
	warnings := logs.FilterMessageSnippet("topic_allowlist does not list").All()
	require.Len(t, warnings, 1, "one warning a minute")
	fields := warnings[0].ContextMap()
	assert.Equal(t, `"attacker-topic"`, fields["first_topic"])
	assert.Equal(t, int64(2), fields["records"])
}

func TestQuoteCut(t *testing.T) {
	assert.Equal(t, `"a\n\x00b"`, quoteCut("a\n\x00b", 64))
	assert.Equal(t, `"abc"…`, quoteCut("abcdef", 3))
}
