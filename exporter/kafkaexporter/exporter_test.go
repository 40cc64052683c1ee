// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

// mixedLogs holds three results, a summary, a decision (keyed by its ID), and a result routed to another topic.
func mixedLogs(otherTopicAttr, otherTopic string) plog.Logs {
	ld := resultLogs(3, "label team is required")
	appendSummary(ld, "summary-1")
	appendDecision(ld, "decision-1")
	r := testResult(3, "kyverno", "routed")
	lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	policyresult.WriteLogRecord(&r, lr)
	lr.Attributes().PutStr(otherTopicAttr, otherTopic)
	return ld
}

func TestProducesKeyedJSONRecords(t *testing.T) {
	const other = "policy-results-audit"
	c := newCluster(t, kfake.SeedTopics(1, other))
	cfg := syncConfig(c)
	cfg.TopicFromAttribute = "kafka.topic"
	cfg.TopicAllowlist = []string{other}
	exp := startExporter(t, cfg)

	require.NoError(t, exp.ConsumeLogs(context.Background(), mixedLogs("kafka.topic", other)))

	recs := consume(t, c.ListenAddrs(), 5, testTopic)
	keys := map[string]bool{}
	for _, r := range recs {
		require.NotNil(t, r.Key, "every record of the batch has an identity attribute")
		keys[string(r.Key)] = true
		var line map[string]any
		require.NoError(t, json.Unmarshal(r.Value, &line), "value %s", r.Value)
		event, ok := header(r, policyresult.AttrEventName)
		require.True(t, ok)
		assert.Equal(t, event, line[recordjson.FieldEventName])
		assert.Equal(t, "test-cluster", line[policyresult.AttrClusterName])
		switch event {
		case policyresult.EventResult:
			assert.Equal(t, string(r.Key), line[policyresult.AttrResultKey])
			assert.Equal(t, "fail", line[policyresult.AttrResult])
			assert.Equal(t, "label team is required", line[policyresult.AttrMessage])
			src, _ := header(r, policyresult.AttrSource)
			assert.Equal(t, "kyverno", src)
		case policyresult.EventSummary:
			assert.Equal(t, "summary-1", string(r.Key))
			assert.InDelta(t, 2, line[policyresult.AttrSummaryFail], 0)
			_, hasSource := header(r, policyresult.AttrSource)
			assert.False(t, hasSource)
		case policyresult.EventDecision:
			assert.Equal(t, "decision-1", string(r.Key))
			assert.Equal(t, "decision-1", line[policyresult.AttrDecisionID])
			src, _ := header(r, policyresult.AttrSource)
			assert.Equal(t, "gatekeeper", src)
		default:
			t.Fatalf("unexpected event %q", event)
		}
	}
	assert.Equal(t, map[string]bool{resultKey(0): true, resultKey(1): true, resultKey(2): true, "summary-1": true,
		"decision-1": true}, keys)

	routed := consume(t, c.ListenAddrs(), 1, other)
	assert.Equal(t, resultKey(3), string(routed[0].Key))
}

func TestOTLPProtoValues(t *testing.T) {
	c := newCluster(t)
	cfg := syncConfig(c)
	cfg.Logs.Encoding = EncodingOTLPProto
	exp := startExporter(t, cfg)

	ld := resultLogs(3, "proto")
	ld.ResourceLogs().At(0).Resource().Attributes().PutStr("k8s.namespace.name", "policy-system")
	ld.ResourceLogs().At(0).ScopeLogs().At(0).Scope().SetName("k8s_reports")
	// A second resource: every value carries the resource of its own record.
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "other-cluster")
	r := testResult(9, "trivy", "other")
	r.Cluster = "other-cluster"
	policyresult.WriteLogRecord(&r, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))

	clusters := map[string]string{}
	for _, rec := range consume(t, c.ListenAddrs(), 4, testTopic) {
		got, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(rec.Value)
		require.NoError(t, err)
		require.Equal(t, 1, got.LogRecordCount())
		grl := got.ResourceLogs().At(0)
		lr := grl.ScopeLogs().At(0).LogRecords().At(0)
		assert.Equal(t, string(rec.Key), strAttr(lr.Attributes(), policyresult.AttrResultKey))
		clusters[string(rec.Key)] = strAttr(grl.Resource().Attributes(), policyresult.AttrClusterName)
		if clusters[string(rec.Key)] == "test-cluster" {
			assert.Equal(t, "policy-system", strAttr(grl.Resource().Attributes(), "k8s.namespace.name"))
			assert.Equal(t, "k8s_reports", grl.ScopeLogs().At(0).Scope().Name())
		}
	}
	assert.Equal(t, map[string]string{
		resultKey(0): "test-cluster", resultKey(1): "test-cluster", resultKey(2): "test-cluster", r.Key(): "other-cluster",
	}, clusters)
}

func TestCompressionRoundTrip(t *testing.T) {
	for _, codec := range []string{CompressionGzip, CompressionZstd, CompressionLZ4, CompressionSnappy} {
		t.Run(codec, func(t *testing.T) {
			c := newCluster(t)
			// Count the batches that arrive compressed with the codec: the attributes' low bits name it.
			var compressed, batches int
			want := map[string]int8{CompressionGzip: 1, CompressionSnappy: 2, CompressionLZ4: 3, CompressionZstd: 4}[codec]
			c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				for _, tp := range req.(*kmsg.ProduceRequest).Topics {
					for _, p := range tp.Partitions {
						var rb kmsg.RecordBatch
						if rb.ReadFrom(p.Records) == nil {
							batches++
							if int8(rb.Attributes&0x07) == want {
								compressed++
							}
						}
					}
				}
				return nil, nil, false
			})
			cfg := syncConfig(c)
			cfg.Producer.Compression = codec
			exp := startExporter(t, cfg)
			require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(200, strings.Repeat("compressible ", 20))))
			keys := map[string]bool{}
			for _, r := range consume(t, c.ListenAddrs(), 200, testTopic) {
				var line map[string]any
				require.NoError(t, json.Unmarshal(r.Value, &line))
				keys[string(r.Key)] = true
			}
			assert.Len(t, keys, 200)
			assert.Positive(t, batches)
			assert.Equal(t, batches, compressed)
		})
	}
}

// countProduce counts produce requests the cluster receives without changing how it answers them.
func countProduce(c *kfake.Cluster) *kfake.FaultHandle {
	return c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: -1})
}

func TestRecordTooLargeIsPermanent(t *testing.T) {
	c := newCluster(t)
	produces := countProduce(c)
	cfg := syncConfig(c)
	cfg.Producer.MaxMessageBytes = 4096
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	exp := startExporter(t, cfg)

	err := exp.ConsumeLogs(context.Background(), resultLogs(1, strings.Repeat("x", 5000)))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), `topic "policy-results": record larger than producer::max_message_bytes or the broker's max.message.bytes: record too large:`)
	assert.Contains(t, err.Error(), "producer::max_message_bytes is 4096")
	assert.Equal(t, 0, produces.Hits(), "a record over the limit is never sent")

	// The rest of a batch with one oversized record is produced, and the oversized one is dropped, not retried.
	ld := resultLogs(3, "small")
	big := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(1)
	big.Attributes().PutStr(policyresult.AttrMessage, strings.Repeat("x", 5000))
	err = exp.ConsumeLogs(context.Background(), ld)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "1 of 3 records dropped")
	recs := consume(t, c.ListenAddrs(), 2, testTopic)
	assert.ElementsMatch(t, []string{resultKey(0), resultKey(2)}, []string{string(recs[0].Key), string(recs[1].Key)})
}

func TestBrokerRejectsTooLargeWithoutRetryStorm(t *testing.T) {
	// The broker's limit is below the exporter's: franz-go sends the record, the broker answers
	// MESSAGE_TOO_LARGE, and exporterhelper must not retry it.
	c := newCluster(t, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "3000"}))
	produces := countProduce(c)
	cfg := syncConfig(c)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	exp := startExporter(t, cfg)

	err := exp.ConsumeLogs(context.Background(), resultLogs(1, strings.Repeat("x", 5000)))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), `topic "policy-results": record larger than producer::max_message_bytes or the broker's max.message.bytes`)
	assert.ErrorIs(t, err, kerr.MessageTooLarge)
	assert.Equal(t, 1, produces.Hits())

	// The producer keeps working after the rejection.
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(2, "small")))
	consume(t, c.ListenAddrs(), 2, testTopic)
}

// (c) The topic's max.message.bytes is below the producer's batch limit, so the broker refuses a batch of
// records that each fit, because of one that does not. Only that one is dropped; the others arrive, in order.
func TestBrokerTooLargeDropsOnlyThatRecord(t *testing.T) {
	const topic = "small-messages"
	c := newCluster(t, kfake.SeedTopics(1, topic), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "3000"}))
	produces := countProduce(c)
	cfg := syncConfig(c)
	cfg.Logs.Topic = topic
	exp := startExporter(t, cfg)

	const n, big = 11, 6
	ld := resultLogs(n, strings.Repeat("fits alone ", 20))
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(big).Attributes().PutStr(policyresult.AttrMessage, strings.Repeat("x", 5000))
	var want []string
	for i := range n {
		if i != big {
			want = append(want, resultKey(i))
		}
	}
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), fmt.Sprintf("1 of %d records dropped", n))
	assert.ErrorIs(t, err, kerr.MessageTooLarge)

	var got []string
	for _, r := range consume(t, c.ListenAddrs(), n-1, topic) {
		got = append(got, string(r.Key))
	}
	assert.Equal(t, want, got)
	assert.Less(t, produces.Hits(), 2*n, "split in halves, not retried one by one without end")
}

func TestTopicAuthorizationIsPermanent(t *testing.T) {
	c := newCluster(t)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	exp := startExporter(t, syncConfig(c))
	err := exp.ConsumeLogs(context.Background(), resultLogs(1, "m"))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), `topic "policy-results": not authorized to write the topic`)
}

// kfake closes the connection on bad credentials, where Kafka answers SASL_AUTHENTICATION_FAILED first. The
// "kafka_answer" cases answer the way Kafka does, through a control function; the "connection_closed" cases keep
// kfake's behavior, which a client cannot tell from a broker going away, so it stays retryable.
func TestSASL(t *testing.T) {
	for _, mech := range []string{MechanismPlain, MechanismScramSHA256} {
		t.Run(mech, func(t *testing.T) {
			for _, tt := range []struct {
				name, password string
				kafkaAnswer    bool
				wantPermanent  bool
				wantErr        string
			}{
				{name: "right", password: "right"},
				{name: "wrong_kafka_answer", password: "wrong", kafkaAnswer: true, wantPermanent: true,
					wantErr: `topic "policy-results": authentication with the brokers failed`},
				{name: "wrong_connection_closed", password: "wrong", wantErr: `topic "policy-results": records have timed out`},
			} {
				t.Run(tt.name, func(t *testing.T) {
					c := newCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "collector", "right"))
					if tt.kafkaAnswer {
						c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
							c.KeepControl()
							resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
							resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
							msg := "Authentication failed: Invalid username or password"
							resp.ErrorMessage = &msg
							return resp, nil, true
						})
					}
					cfg := syncConfig(c)
					cfg.TimeoutConfig.Timeout = 1500 * time.Millisecond
					cfg.Auth.SASL.GetOrInsertDefault()
					*cfg.Auth.SASL.Get() = SASLConfig{Mechanism: mech, Username: "collector", Password: configOpaque(tt.password),
						InsecurePlaintext: true} // kfake speaks no TLS
					exp := startExporter(t, cfg)
					err := exp.ConsumeLogs(context.Background(), resultLogs(1, mech))
					if tt.wantErr == "" {
						require.NoError(t, err)
						consumeWith(t, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(saslMechanism(cfg.Auth.SASL.Get()))}, 1, testTopic)
						return
					}
					require.Error(t, err)
					assert.Equal(t, tt.wantPermanent, consumererror.IsPermanent(err), "%v", err)
					assert.Contains(t, err.Error(), tt.wantErr)
					assert.NotContains(t, err.Error(), tt.password)
				})
			}
		})
	}
}

func TestPartialFailureRetriesOnlyFailedRecords(t *testing.T) {
	const other = "policy-results-other"
	c := newCluster(t, kfake.SeedTopics(1, other))
	// The other topic refuses every produce with a retriable error until the fault is removed.
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: other, Err: kerr.NotEnoughReplicas, Count: -1})
	cfg := syncConfig(c)
	cfg.TopicFromAttribute = "kafka.topic"
	cfg.TopicAllowlist = []string{other}
	cfg.TimeoutConfig.Timeout = 1500 * time.Millisecond
	e, err := newLogsExporter(cfg, exportertestSettings())
	require.NoError(t, err)
	require.NoError(t, e.start(context.Background(), nil))
	defer func() { require.NoError(t, e.shutdown(context.Background())) }()

	err = e.consumeLogs(context.Background(), mixedLogs("kafka.topic", other))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	var le consumererror.Logs
	require.ErrorAs(t, err, &le)
	retry := le.Data()
	require.Equal(t, 1, retry.LogRecordCount())
	assert.Equal(t, resultKey(3), strAttr(retry.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes(), policyresult.AttrResultKey))
	assert.Equal(t, "test-cluster", strAttr(retry.ResourceLogs().At(0).Resource().Attributes(), policyresult.AttrClusterName))
	assert.Contains(t, err.Error(), fmt.Sprintf("1 of 6 records not acknowledged by Kafka: topic %q", other))

	h.Remove()
	require.NoError(t, e.consumeLogs(context.Background(), retry))
	assert.Len(t, consume(t, c.ListenAddrs(), 5, testTopic), 5, "the acknowledged records are not produced again")
	assert.Equal(t, resultKey(3), string(consume(t, c.ListenAddrs(), 1, other)[0].Key))
}
