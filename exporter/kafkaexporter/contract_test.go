// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver"
)

// brokerReceiver is a receiver made of the broker itself: it decodes every produce request kfake receives,
// hands the records to its consumer, and answers the request with what the consumer said. A permanent error is
// answered INVALID_RECORD, which producers do not retry; another error NOT_ENOUGH_REPLICAS, which they retry;
// success lets kfake store the records.
type brokerReceiver struct {
	mu       sync.Mutex
	consumer consumer.Logs
}

type brokerReceiverConfig struct{ r *brokerReceiver }

func (b *brokerReceiver) factory() receiver.Factory {
	return receiver.NewFactory(component.MustNewType("kafka_broker"),
		func() component.Config { return &brokerReceiverConfig{r: b} },
		receiver.WithLogs(func(_ context.Context, _ receiver.Settings, _ component.Config, next consumer.Logs) (receiver.Logs, error) {
			return &brokerReceiverInstance{b: b, next: next}, nil
		}, component.StabilityLevelDevelopment))
}

type brokerReceiverInstance struct {
	b    *brokerReceiver
	next consumer.Logs
}

func (r *brokerReceiverInstance) Start(context.Context, component.Host) error {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	r.b.consumer = r.next
	return nil
}

func (r *brokerReceiverInstance) Shutdown(context.Context) error {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	r.b.consumer = nil
	return nil
}

func (b *brokerReceiver) install(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		b.mu.Lock()
		next := b.consumer
		b.mu.Unlock()
		if next == nil {
			return nil, nil, false
		}
		req := kreq.(*kmsg.ProduceRequest)
		var consumeErr error
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				var batch kmsg.RecordBatch
				if err := batch.ReadFrom(p.Records); err != nil {
					return nil, err, true
				}
				recs, err := kfake.BatchRecords(batch)
				if err != nil {
					return nil, err, true
				}
				for _, rec := range recs {
					ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(rec.Value)
					if err != nil {
						return nil, err, true
					}
					if err := next.ConsumeLogs(context.Background(), ld); err != nil && consumeErr == nil {
						consumeErr = err
					}
				}
			}
		}
		if consumeErr == nil {
			return nil, nil, false
		}
		code := kerr.NotEnoughReplicas.Code
		if consumererror.IsPermanent(consumeErr) {
			code = kerr.InvalidRecord.Code
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

func TestConsumeContract(t *testing.T) {
	c := newCluster(t)
	b := &brokerReceiver{}
	b.install(c)

	cfg := createDefaultConfig().(*Config)
	cfg.Brokers = c.ListenAddrs()
	cfg.Logs.Topic = testTopic
	// The contract builds each element with exactly one record and reads it back by an attribute; otlp_proto
	// carries it through unchanged.
	cfg.Logs.Encoding = EncodingOTLPProto
	cfg.RecordKeyAttribute = "test_id"
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.TimeoutConfig.Timeout = 2 * time.Second
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 0

	exportertest.CheckConsumeContract(exportertest.CheckConsumeContractParams{
		T:                    t,
		NumberOfTestElements: 30,
		Signal:               pipeline.SignalLogs,
		ExporterFactory:      NewFactory(),
		ExporterConfig:       cfg,
		ReceiverFactory:      b.factory(),
		ReceiverConfig:       &brokerReceiverConfig{r: b},
	})
}
