// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/kafkatest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const outagePartitions = 3

// queuedConfig is the production shape: a sending queue and retries that never give up, with short intervals.
func queuedConfig(brokers []string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Brokers = brokers
	cfg.Logs.Topic = testTopic
	cfg.TimeoutConfig.Timeout = 1500 * time.Millisecond
	cfg.RetryConfig.InitialInterval = 100 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 500 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 0
	cfg.QueueConfig.Get().QueueSize = 100_000
	return cfg
}

// outage is the exporter under test with what it reports observed, so that the tests wait for what the
// exporter says (a retry, every record sent) rather than for time to pass.
type outage struct {
	exp  exporter.Logs
	logs *observer.ObservedLogs
	tt   *componenttest.Telemetry
}

func startOutage(t *testing.T, brokers []string) *outage {
	exp, logs, tt := observedExporter(t, queuedConfig(brokers))
	return &outage{exp: exp, logs: logs, tt: tt}
}

// retries is how often exporterhelper gave a failed batch back to its queue's retry.
func (o *outage) retries() int {
	return o.logs.FilterMessage("Exporting failed. Will retry the request after interval.").Len()
}

// queued is how many batches wait in the sending queue.
func (o *outage) queued() int64 {
	return byAttribute(o.tt, "otelcol_exporter_queue_size", "exporter")[metadata.Type.String()]
}

// waitAllSent waits until the exporter reports every record sent: nothing is queued or retried any more, so
// the topic holds all it will ever hold, duplicates included.
func (o *outage) waitAllSent(t *testing.T, n int) {
	sent := func() int64 {
		return byAttribute(o.tt, "otelcol_exporter_sent_log_records", "exporter")[metadata.Type.String()]
	}
	require.Eventually(t, func() bool { return sent() == int64(n) }, time.Minute, 10*time.Millisecond,
		"%d of %d records sent", sent(), n)
}

// streamer sends batches of 10 results with keys unique over the stream every 20 ms until stopped.
type streamer struct {
	batches atomic.Int64
	// stop ends the stream and returns every key sent; a test that fails early stops it when it ends.
	stop func() map[string]bool
}

// streamKey is the key of the i-th result of batch b.
func streamKey(b, i int) string {
	r := testResult(b*10+i, "kyverno", "stream")
	return r.Key()
}

func stream(t *testing.T, exp exporter.Logs) *streamer {
	stop, done := make(chan struct{}), make(chan map[string]bool, 1)
	s := &streamer{stop: sync.OnceValue(func() map[string]bool {
		close(stop)
		return <-done
	})}
	t.Cleanup(func() { s.stop() })
	go func() {
		sent := map[string]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for b := 0; ; b++ {
			select {
			case <-stop:
				done <- sent
				return
			case <-tick.C:
			}
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			policyresult.WriteResource(rl.Resource(), "test-cluster")
			lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
			for i := range 10 {
				r := testResult(b*10+i, "kyverno", "stream")
				policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
				sent[r.Key()] = true
			}
			assert.NoError(t, exp.ConsumeLogs(context.Background(), ld), "the queue accepts every batch")
			s.batches.Add(1)
		}
	}()
	return s
}

// nextBatch waits until the stream queued a batch after this call, and returns its number.
func (s *streamer) nextBatch(t *testing.T) int {
	after := s.batches.Load()
	require.Eventually(t, func() bool { return s.batches.Load() > after }, 10*time.Second, 5*time.Millisecond)
	return int(after)
}

// topicWatch consumes the topic while the test runs and remembers the keys that arrived.
type topicWatch struct {
	mu   sync.Mutex
	seen map[string]bool
}

func watchTopic(t *testing.T, brokers []string) *topicWatch {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(testTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	w := &topicWatch{seen: map[string]bool{}}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				w.mu.Lock()
				w.seen[string(r.Key)] = true
				w.mu.Unlock()
			})
		}
	}()
	return w
}

// waitDelivered waits until the first record of batch b is on the topic.
func (w *topicWatch) waitDelivered(t *testing.T, b int) {
	key := streamKey(b, 0)
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.seen[key]
	}, time.Minute, 10*time.Millisecond, "batch %d delivered", b)
}

// readTopic reads every partition of the topic up to its end offset and returns how often each key arrived.
func readTopic(t *testing.T, brokers []string) map[string]int {
	offsets := map[int32]kgo.Offset{}
	ends := map[int32]int64{}
	for p := range int32(outagePartitions) {
		offsets[p] = kgo.NewOffset().AtStart()
		ends[p] = kafkatest.EndOffset(t, brokers, testTopic, p)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{testTopic: offsets}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[string]int{}
	next := map[int32]int64{}
	complete := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !complete() {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %v of %v", next, ends)
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)]++
			next[r.Partition] = r.Offset + 1
		})
	}
	return got
}

// consumeKeys reads until every key in want arrived (or a minute passed), then a little longer to see
// duplicates, and returns how often each key arrived.
func consumeKeys(t *testing.T, brokers []string, topic string, want map[string]bool) map[string]int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	got := map[string]int{}
	complete := func() bool {
		for k := range want {
			if got[k] == 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	var settle time.Time
	for time.Now().Before(deadline) && (settle.IsZero() || time.Now().Before(settle)) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)]++ })
		if settle.IsZero() && complete() {
			settle = time.Now().Add(time.Second)
		}
	}
	return got
}

func duplicates(got map[string]int) int {
	n := 0
	for _, c := range got {
		n += c - 1
	}
	return n
}

// The broker refuses every produce request with a retriable error, as a cluster without enough in-sync
// replicas does, until the exporter has had to retry. Nothing is stored meanwhile, so every record arrives
// exactly once.
func TestBrokerRefusesProduceForAWhile(t *testing.T) {
	c := newCluster(t)
	o := startOutage(t, c.ListenAddrs())
	w := watchTopic(t, c.ListenAddrs())

	s := stream(t, o.exp)
	w.waitDelivered(t, s.nextBatch(t))
	before := o.retries()
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	// Two retries of a batch refused throughout its timeout: the queue fills while the broker refuses.
	require.Eventually(t, func() bool { return o.retries() >= before+2 }, time.Minute, 10*time.Millisecond)
	refused := h.Hits()
	h.Remove()
	w.waitDelivered(t, s.nextBatch(t))
	sent := s.stop()

	o.waitAllSent(t, len(sent))
	got := readTopic(t, c.ListenAddrs())
	missing := 0
	for k := range sent {
		if got[k] == 0 {
			missing++
		}
	}
	t.Logf("sent %d records, refused %d produce requests, consumed %d distinct, %d duplicates",
		len(sent), refused, len(got), duplicates(got))
	assert.Positive(t, refused)
	assert.Zero(t, missing, "records lost")
	assert.Len(t, got, len(sent), "only the records sent arrive")
	assert.Zero(t, duplicates(got), "the idempotent producer writes every record once")
}

// The broker process goes away until batches wait in the exporter's queue, and comes back on the same port with
// its data (kfake's DataDir). Records in flight when it stopped may be written twice: at least once, duplicates
// counted.
func TestBrokerRestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dir := t.TempDir()
	start := func() *kfake.Cluster {
		var c *kfake.Cluster
		require.Eventually(t, func() bool {
			c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(outagePartitions, testTopic), kfake.Ports(port), kfake.DataDir(dir))
			return err == nil
		}, 10*time.Second, 100*time.Millisecond, "restarting on port %d: %v", port, err)
		return c
	}
	c := start()
	brokers := c.ListenAddrs()
	o := startOutage(t, brokers)
	w := watchTopic(t, brokers)

	s := stream(t, o.exp)
	w.waitDelivered(t, s.nextBatch(t))
	c.Close()
	// The produce in flight waits for the broker (franz-go keeps a record that may have been written until
	// the broker answers), so the exporter neither fails nor retries: batches wait in its queue.
	require.Eventually(t, func() bool { return o.queued() >= 10 }, time.Minute, 10*time.Millisecond,
		"batches wait in the queue while the broker is away")
	var once sync.Once
	c = start()
	t.Cleanup(func() { once.Do(c.Close) })
	w.waitDelivered(t, s.nextBatch(t))
	sent := s.stop()

	o.waitAllSent(t, len(sent))
	got := readTopic(t, brokers)
	missing := 0
	for k := range sent {
		if got[k] == 0 {
			missing++
		}
	}
	t.Logf("sent %d records, consumed %d distinct, %d duplicates", len(sent), len(got), duplicates(got))
	assert.Zero(t, missing, "records lost")
	assert.Len(t, got, len(sent), "only the records sent arrive")
}
