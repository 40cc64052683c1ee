// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/kafkatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestBinaryWaitsForKafkaTopic: decision_logs → kafka on a persistent queue, against a broker that does not
// create topics (auto.create.topics.enable=false), as with Strimzi or a GitOps sync that creates the topic
// after the collector started. Every decision accepted before the topic exists waits, survives a restart of the
// collector, and arrives exactly once after the topic is created; meanwhile the collector says which topic it
// waits for, in its log and in a self-metric.
func TestBinaryWaitsForKafkaTopic(t *testing.T) {
	const topic = "decisions"
	kafka, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer kafka.Close()
	brokers := kafka.ListenAddrs()

	dir := t.TempDir()
	extra := fmt.Sprintf(`
exporters:
  kafka:
    brokers: [%q]
    logs:
      topic: %s
    timeout: 2s
    retry_on_failure:
      initial_interval: 500ms
      max_interval: 2s
      max_elapsed_time: 0
    sending_queue:
      storage: file_storage
service:
  pipelines:
    logs:
      exporters: [durable_file, kafka, policy_metrics]
`, brokers[0], topic)
	c, p := start(t, dir, extra)

	sent := map[string]bool{}
	upload := func(p ports, batch int) {
		var events []string
		for i := range 20 {
			id := fmt.Sprintf("decision-%d-%d", batch, i)
			sent[id] = true
			events = append(events, fmt.Sprintf(`{"decision_id":%q,"path":"kubernetes/admission","input":{"user":"bob"},"result":false,"timestamp":"2026-11-23T08:00:00Z"}`, id))
		}
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/logs", p.OPA), "application/json",
			bytes.NewReader([]byte("["+strings.Join(events, ",")+"]")))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "the collector accepts decisions while the topic is missing")
	}
	for b := range 3 {
		upload(p, b)
	}

	// The collector tells why records wait: a warning naming the topic, and the gauge.
	waitMissing := func(p ports) {
		c.WaitOutput(`"topic": "decisions"`, 30*time.Second)
		metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.Metrics)
		collectortest.Eventually(t, 30*time.Second, func() error {
			v, err := selfmetrics.ReadMetric(metrics, "otelcol_exporter_kafka_missing_topic_records", `topic="decisions"`)
			if err != nil || v == 0 {
				return fmt.Errorf("no records waiting for the topic yet (%v, %w)", v, err)
			}
			return nil
		})
	}
	waitMissing(p)
	assert.Contains(t, c.Output(), "Kafka topic does not exist")
	assert.NotContains(t, c.Output(), "Dropping data", "nothing is dropped while the topic is missing")

	// A restart while records wait: the queue on file_storage keeps them.
	c.Stop()
	c, p = start(t, dir, extra)
	upload(p, 3)
	waitMissing(p)

	require.False(t, kafkatest.TopicExists(t, brokers, topic), "the broker does not create topics")
	// The operator creates the topic once the restarted collector has retried what waits, more than once.
	collectortest.Eventually(t, time.Minute, func() error {
		if n := strings.Count(c.Output(), "Exporting failed. Will retry the request after interval."); n < 2 {
			return fmt.Errorf("%d retries since the restart", n)
		}
		return nil
	})
	kafkatest.CreateTopic(t, brokers, topic, 1)

	// Everything waiting is delivered once the queue is empty and nothing waits for the topic any more.
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.Metrics)
	collectortest.Eventually(t, 60*time.Second, func() error {
		q, err := selfmetrics.ReadMetric(metrics, "otelcol_exporter_queue_size", `exporter="kafka"`)
		if err != nil || q > 0 {
			return fmt.Errorf("kafka queue holds %v batches (%w)", q, err)
		}
		text, err := selfmetrics.Scrape(http.DefaultClient, metrics)
		if err != nil {
			return err
		}
		if _, found := selfmetrics.Sum(text, "otelcol_exporter_kafka_missing_topic_records", ""); found {
			return fmt.Errorf("records still wait for a topic")
		}
		return nil
	})
	c.WaitOutput("Kafka topic exists now", 10*time.Second)

	got := consumeDecisionIDs(t, brokers, topic)
	counts := map[string]int{}
	for _, id := range got {
		counts[id]++
	}
	for id := range sent {
		assert.Equal(t, 1, counts[id], "decision %s arrives exactly once", id)
	}
	assert.Len(t, got, len(sent), "the topic holds exactly the decisions sent")
	assert.NotContains(t, c.Output(), "Dropping data")
	c.Stop()
}

// consumeDecisionIDs reads the one-partition topic from its start to its end offset, so that a duplicate
// written last is read too, and returns the decision id of every record.
func consumeDecisionIDs(t *testing.T, brokers []string, topic string) []string {
	end := kafkatest.EndOffset(t, brokers, topic, 0)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for next := int64(0); next < end; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", next, end)
		fs.EachRecord(func(r *kgo.Record) {
			var line map[string]any
			require.NoError(t, json.Unmarshal(r.Value, &line))
			id, _ := line[policyresult.AttrDecisionID].(string)
			ids = append(ids, id)
			next = r.Offset + 1
		})
	}
	return ids
}
