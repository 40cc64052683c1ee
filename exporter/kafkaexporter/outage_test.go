package kafkaexporter

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

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

// stream sends batches of 10 results with keys unique over the stream every 20 ms until stop is closed, and
// returns every key sent.
func stream(t *testing.T, exp exporter.Logs, stop <-chan struct{}) <-chan map[string]bool {
	done := make(chan map[string]bool, 1)
	go func() {
		sent := map[string]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
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
			for j := range 10 {
				r := testResult(i*10+j, "kyverno", "stream")
				policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
				sent[r.Key()] = true
			}
			assert.NoError(t, exp.ConsumeLogs(context.Background(), ld), "the queue accepts every batch")
		}
	}()
	return done
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

// The broker refuses every produce request with a retriable error for six seconds, as a cluster without enough
// in-sync replicas does. Nothing is stored meanwhile, so every record arrives exactly once.
func TestBrokerRefusesProduceForAWhile(t *testing.T) {
	c := newCluster(t)
	exp := startExporter(t, queuedConfig(c.ListenAddrs()))

	stop := make(chan struct{})
	sentCh := stream(t, exp, stop)
	time.Sleep(time.Second)
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	time.Sleep(6 * time.Second)
	refused := h.Hits()
	h.Remove()
	time.Sleep(time.Second)
	close(stop)
	sent := <-sentCh

	got := consumeKeys(t, c.ListenAddrs(), testTopic, sent)
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

// The broker process goes away for three seconds and comes back on the same port with its data (kfake's
// DataDir). Records in flight when it stopped may be written twice: at least once, duplicates counted.
func TestBrokerRestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dir := t.TempDir()
	start := func() *kfake.Cluster {
		var c *kfake.Cluster
		require.Eventually(t, func() bool {
			c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, testTopic), kfake.Ports(port), kfake.DataDir(dir))
			return err == nil
		}, 10*time.Second, 100*time.Millisecond, "restarting on port %d: %v", port, err)
		return c
	}
	c := start()
	brokers := c.ListenAddrs()
	exp := startExporter(t, queuedConfig(brokers))

	stop := make(chan struct{})
	sentCh := stream(t, exp, stop)
	time.Sleep(time.Second)
	c.Close()
	time.Sleep(3 * time.Second)
	var once sync.Once
	c = start()
	t.Cleanup(func() { once.Do(c.Close) })
	time.Sleep(2 * time.Second)
	close(stop)
	sent := <-sentCh

	got := consumeKeys(t, brokers, testTopic, sent)
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
