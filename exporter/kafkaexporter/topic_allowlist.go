// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// refusedTopics counts the records of a batch whose topic_from_attribute named a topic outside
// topic_allowlist, and keeps the first such name for the log.
type refusedTopics struct {
	records int
	first   string
}

func (r *refusedTopics) add(topic string) {
	if topic == "" {
		return
	}
	if r.records == 0 {
		r.first = topic
	}
	r.records++
}

// reportRefusedTopics counts the records sent to logs::topic instead of the topic their attribute named, and
// warns at most once a minute: the names come from the data, and a batch after batch of them must not flood the
// log. The name is quoted and cut, as the data chose it.
func (e *logsExporter) reportRefusedTopics(ctx context.Context, r refusedTopics) {
	if r.records == 0 {
		return
	}
	e.telemetry.ExporterKafkaTopicNotAllowedRecords.Add(ctx, int64(r.records))
	if e.refusedLog.allow(time.Now()) {
		e.logger.Warn("Records named a topic that topic_allowlist does not list; they go to logs::topic",
			zap.String("topic_from_attribute", e.cfg.TopicFromAttribute), zap.String("first_topic", quoteCut(r.first, 64)),
			zap.Int("records", r.records), zap.String("logs::topic", e.cfg.Logs.Topic))
	}
}

// quoteCut quotes s (Go syntax), cut to at most n bytes of it.
func quoteCut(s string, n int) string {
	if len(s) > n {
		return strconv.Quote(s[:n]) + "…"
	}
	return strconv.Quote(s)
}

// rateLimit allows one event per missingTopicLogInterval.
type rateLimit struct {
	mu   sync.Mutex
	last time.Time
}

func (l *rateLimit) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < missingTopicLogInterval {
		return false
	}
	l.last = now
	return true
}
