// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package kafkatest changes and inspects topics of a Kafka-protocol broker (franz-go's kfake in the tests) the way
// an operator or an admin tool would, with raw protocol requests: the tests need no admin client module.
package kafkatest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/kafkatest"

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// request sends one request to the brokers and fails the test on a transport error.
func request[R kmsg.Response](t testing.TB, brokers []string, req interface {
	RequestWith(context.Context, kmsg.Requestor) (R, error)
}) R {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp
}

// CreateTopic creates a topic with the given number of partitions and one replica.
func CreateTopic(t testing.TB, brokers []string, topic string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	if err := kerr.ErrorForCode(request[*kmsg.CreateTopicsResponse](t, brokers, req).Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

// DeleteTopic deletes a topic.
func DeleteTopic(t testing.TB, brokers []string, topic string) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic} // before v6
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	if err := kerr.ErrorForCode(request[*kmsg.DeleteTopicsResponse](t, brokers, req).Topics[0].ErrorCode); err != nil {
		t.Fatalf("deleting topic %s: %v", topic, err)
	}
}

// TopicExists asks for the topic's metadata without asking the broker to create it.
func TopicExists(t testing.TB, brokers []string, topic string) bool {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.MetadataResponse](t, brokers, req).Topics[0].ErrorCode == 0
}

// EndOffset is the offset the next record of a partition will get: how many records it holds while nothing was
// deleted or compacted.
func EndOffset(t testing.TB, brokers []string, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = -1 // the latest offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := request[*kmsg.ListOffsetsResponse](t, brokers, req).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("end offset of %s/%d: %v", topic, partition, err)
	}
	return p.Offset
}
