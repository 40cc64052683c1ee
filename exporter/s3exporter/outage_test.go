package s3exporter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestOutageLosesAndDuplicatesNothing streams decisions through the factory's exporter with a persistent
// sending queue while MinIO is down for 20 seconds, and expects every decision exactly once in the bucket.
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
	exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), host))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	// 20 batches of 5 decisions a second: 3 s before the outage, 20 s of outage, 4 s after.
	const perBatch = 5
	var (
		mu   sync.Mutex
		sent []string
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for b := 0; ; b++ {
			select {
			case <-tick.C:
			case <-t.Context().Done():
				return
			}
			mu.Lock()
			stop := sent == nil && b > 0
			mu.Unlock()
			if stop {
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
		}
	}()
	stopStreaming := func() []string {
		mu.Lock()
		all := sent
		sent = nil
		mu.Unlock()
		<-done
		return all
	}

	time.Sleep(3 * time.Second)
	srv.Stop()
	t.Log("MinIO stopped")
	time.Sleep(20 * time.Second)
	srv.Restart()
	t.Log("MinIO restarted")
	time.Sleep(4 * time.Second)
	all := stopStreaming()
	require.Greater(t, len(all), 500, "records streamed")

	// The queue drains after the restart: wait for every record, then check that none came twice.
	var counts map[string]int
	require.Eventually(t, func() bool {
		counts = map[string]int{}
		for _, o := range listObjects(t, srv.Client()) {
			for _, line := range o.parse(t) {
				counts[line[policyresult.AttrDecisionID].(string)]++
			}
		}
		return len(counts) == len(all)
	}, 60*time.Second, 500*time.Millisecond, "stored %d of %d records", len(counts), len(all))
	t.Logf("%d records, each stored once", len(all))
	for _, id := range all {
		assert.Equal(t, 1, counts[id], "record %s", id)
	}
}
