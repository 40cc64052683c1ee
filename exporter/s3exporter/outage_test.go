// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestOutageLosesAndDuplicatesNothing streams decisions through the factory's exporter with a persistent
// sending queue while MinIO is down, and expects every decision exactly once in the bucket. The outage lasts
// until the exporter has retried and hundreds of decisions wait in the queue.
func TestOutageLosesAndDuplicatesNothing(t *testing.T) {
	srv := startMinIO(t)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.S3Uploader.S3Bucket = testBucket
	cfg.S3Uploader.Endpoint = srv.Endpoint()
	cfg.S3Uploader.S3ForcePathStyle = true
	cfg.S3Uploader.Compression = CompressionZstd
	cfg.RetryConfig.InitialInterval = 100 * time.Millisecond
	cfg.RetryConfig.MaxInterval = time.Second
	cfg.RetryConfig.MaxElapsedTime = 0
	storage := filestoragetest.ID
	cfg.QueueConfig.Get().StorageID = &storage
	require.NoError(t, cfg.Validate())

	host := filestoragetest.NewHost(t, t.TempDir())
	defer func() { require.NoError(t, host.Ext.Shutdown(context.Background())) }()
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	core, logs := observer.New(zapcore.InfoLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), host))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	// 20 batches of 5 decisions a second; batch b holds the ids b<b>-0 to b<b>-4.
	const perBatch = 5
	var (
		mu      sync.Mutex
		sent    []string
		batches atomic.Int64
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for b := 0; ; b++ {
			select {
			case <-tick.C:
			case <-stop:
				return
			}
			ids := make([]string, perBatch)
			for i := range ids {
				ids[i] = fmt.Sprintf("b%04d-%d", b, i)
			}
			ld := plog.NewLogs()
			addDecisions(ld, "prod-eu-1", time.Now(), ids...)
			if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
				t.Errorf("batch %d not queued: %v", b, err)
				return
			}
			mu.Lock()
			sent = append(sent, ids...)
			mu.Unlock()
			batches.Add(1)
		}
	}()
	stopStreaming := sync.OnceFunc(func() {
		close(stop)
		<-done
	})
	defer stopStreaming()
	waitBatches := func(n int64) int64 {
		require.Eventually(t, func() bool { return batches.Load() >= n }, time.Minute, 5*time.Millisecond,
			"%d of %d batches queued", batches.Load(), n)
		return batches.Load()
	}
	waitStored := func(b int64) {
		id := fmt.Sprintf("b%04d-0", b-1)
		require.Eventually(t, func() bool {
			for _, o := range listObjects(t, srv.Client()) {
				for _, line := range o.parse(t) {
					if line[policyresult.AttrDecisionID] == id {
						return true
					}
				}
			}
			return false
		}, time.Minute, 100*time.Millisecond, "batch %d stored", b-1)
	}
	retries := func() int {
		return logs.FilterMessage("Exporting failed. Will retry the request after interval.").Len()
	}

	waitStored(waitBatches(25))
	before := retries()
	srv.Stop()
	t.Log("MinIO stopped")
	down := batches.Load()
	require.Eventually(t, func() bool { return retries() >= before+3 }, time.Minute, 10*time.Millisecond,
		"the exporter fails against the stopped MinIO and retries")
	waitBatches(down + 60)
	srv.Restart()
	t.Log("MinIO restarted")
	waitStored(waitBatches(batches.Load() + 25))
	stopStreaming()
	mu.Lock()
	all := sent
	mu.Unlock()
	require.Greater(t, len(all), 500, "records streamed")

	// Once the exporter reports every record sent, the queue is drained and nothing more will be uploaded:
	// the bucket holds all it ever will, duplicates included.
	require.Eventually(t, func() bool { return sentRecords(tel) == int64(len(all)) }, time.Minute, 10*time.Millisecond,
		"%d of %d records sent", sentRecords(tel), len(all))
	counts := map[string]int{}
	for _, o := range listObjects(t, srv.Client()) {
		for _, line := range o.parse(t) {
			counts[line[policyresult.AttrDecisionID].(string)]++
		}
	}
	require.Len(t, counts, len(all), "stored %d of %d records", len(counts), len(all))
	t.Logf("%d records, each stored once, after %d retries", len(all), retries())
	for _, id := range all {
		assert.Equal(t, 1, counts[id], "record %s", id)
	}
}

// sentRecords is exporterhelper's count of the records the exporter delivered.
func sentRecords(tel *componenttest.Telemetry) int64 {
	m, err := tel.GetMetric("otelcol_exporter_sent_log_records")
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, _ := dp.Attributes.Value("exporter"); v.AsString() == metadata.Type.String() {
			n += dp.Value
		}
	}
	return n
}
