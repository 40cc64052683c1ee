// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

const (
	// missingTopicLogInterval spaces the warnings about one missing topic: exporterhelper retries every few
	// seconds, and a topic that an operator creates in an hour should not write a thousand lines.
	missingTopicLogInterval = time.Minute
	// maxMissingTopics bounds the topics tracked one by one. topic_from_attribute takes topics from the data,
	// limited to topic_allowlist, which is the configuration's to size; beyond this bound the rest are reported
	// together as otherMissingTopics.
	maxMissingTopics = 64
	// otherMissingTopics cannot be a topic's name: Kafka allows only [a-zA-Z0-9._-] there.
	otherMissingTopics = "(other)"
)

// missingTopics follows the topics that records wait for because they do not exist, so that an operator sees why
// records wait: a warning naming the topic at the first failure and then once a minute, an info line when the
// topic appears, and the exporter_kafka_missing_topic_records gauge in between.
type missingTopics struct {
	logger     *zap.Logger
	autoCreate bool
	now        func() time.Time

	mu     sync.Mutex
	topics map[string]*missingTopic
}

type missingTopic struct {
	since, logged time.Time
	records       int
	failures      int
}

func newMissingTopics(logger *zap.Logger, autoCreate bool) *missingTopics {
	return &missingTopics{logger: logger, autoCreate: autoCreate, now: time.Now, topics: map[string]*missingTopic{}}
}

// update takes the outcome of one attempt: how many records waited for each missing topic, and which topics
// acknowledged records.
func (m *missingTopics) update(waiting map[string]int, delivered map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for topic := range delivered {
		mt, ok := m.topics[topic]
		if !ok {
			continue
		}
		delete(m.topics, topic)
		m.logger.Info("Kafka topic exists now: the records that waited for it are produced",
			zap.String("topic", topic), zap.Duration("waited", now.Sub(mt.since)))
	}
	others := 0
	// In order, so that the same topics are followed by name from one attempt to the next.
	for _, topic := range slices.Sorted(maps.Keys(waiting)) {
		n := waiting[topic]
		if _, ok := m.topics[topic]; !ok && m.tracked() >= maxMissingTopics {
			others += n
			continue
		}
		m.note(topic, n, now)
	}
	switch {
	case others > 0:
		m.note(otherMissingTopics, others, now)
	case len(delivered) > 0:
		// The topics beyond the bound are not known by name: they count as found once an attempt delivers
		// and none of its records waited for one of them.
		delete(m.topics, otherMissingTopics)
	}
}

// tracked is the number of topics followed by name.
func (m *missingTopics) tracked() int {
	if _, ok := m.topics[otherMissingTopics]; ok {
		return len(m.topics) - 1
	}
	return len(m.topics)
}

// note records that n records of the latest attempt waited for topic, and warns at most once a minute a topic.
func (m *missingTopics) note(topic string, n int, now time.Time) {
	mt, ok := m.topics[topic]
	if !ok {
		mt = &missingTopic{since: now}
		m.topics[topic] = mt
	}
	mt.records = n
	mt.failures++
	if !mt.logged.IsZero() && now.Sub(mt.logged) < missingTopicLogInterval {
		return
	}
	mt.logged = now
	m.logger.Warn("Kafka topic does not exist: its records are retried until it does (retry_on_failure bounds how long)",
		zap.String("topic", topic), zap.Int("records", n), zap.Duration("waiting_for", now.Sub(mt.since)),
		zap.Int("failed_attempts", mt.failures), zap.Bool("allow_auto_topic_creation", m.autoCreate))
}

// observe reports the gauge.
func (m *missingTopics) observe(_ context.Context, o metric.Int64Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for topic, mt := range m.topics {
		o.Observe(int64(mt.records), metric.WithAttributes(attribute.String("topic", topic)))
	}
	return nil
}
