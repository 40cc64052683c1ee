// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package arrivals

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicReader consumes a topic from its start and keeps the item id of every record (each value one JSON line,
// the kafka exporter's json encoding). It survives the broker going away: the client reconnects and resumes
// from the offsets it reached.
type TopicReader struct {
	client *kgo.Client
	lines  int
	perID  map[string]int
}

// NewTopicReader consumes topic on brokers.
func NewTopicReader(brokers []string, topic string) (*TopicReader, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	return &TopicReader{client: cl, perID: map[string]int{}}, nil
}

// Refresh reads what arrived until a poll of wait brings nothing new.
func (r *TopicReader) Refresh(wait time.Duration) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		fs := r.client.PollFetches(ctx)
		cancel()
		var err error
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			id, lerr := LineID(rec.Value)
			if lerr != nil && err == nil {
				err = fmt.Errorf("record at %s/%d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, lerr)
			}
			r.perID[id]++
			r.lines++
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// Counts returns how many records carry each id, and the number of records.
func (r *TopicReader) Counts() (perID map[string]int, lines int) { return r.perID, r.lines }

// Close closes the consumer.
func (r *TopicReader) Close() { r.client.Close() }
