// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package outage is the outage test of the distribution: while a client streams at a fixed rate, the backend
// the collector exports to (MinIO, a Kafka-protocol broker, the results server) goes down and comes back. The
// persistent sending_queue must grow within its configured bound, the receiver must push back (503, which the
// client retries) once the queue is full instead of dropping, the queue must drain after the recovery, and every
// accepted item must arrive. See README.md.
package outage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// scale of one run: TESTBED_SCALE=full for `make testbed`, a short run otherwise.
type scale struct {
	Name       string        `json:"scale"`
	Rate       int           `json:"rate_per_s"`
	ChunkSize  int           `json:"items_per_upload"`
	Before     time.Duration `json:"-"` // streaming before the outage
	Outage     time.Duration `json:"-"`
	After      time.Duration `json:"-"` // streaming after the recovery
	QueueBytes int64         `json:"queue_bytes"`
	Sample     time.Duration `json:"-"`
}

func currentScale() scale {
	if os.Getenv("TESTBED_SCALE") == "full" {
		return scale{Name: "full", Rate: 500, ChunkSize: 50, Before: 15 * time.Second, Outage: 2 * time.Minute,
			After: 30 * time.Second, QueueBytes: 16 << 20, Sample: time.Second}
	}
	return scale{Name: "short", Rate: 200, ChunkSize: 20, Before: 4 * time.Second, Outage: 10 * time.Second,
		After: 4 * time.Second, QueueBytes: 512 << 10, Sample: 250 * time.Millisecond}
}

func TestOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO, a Kafka-protocol broker, the results server and three collectors")
	}
	t.Parallel()
	runID := loadclient.NewRunID()
	for _, dest := range []struct {
		name  string
		start func(*testing.T) *destination
	}{
		{"s3", minioDestination},
		{"kafka", kafkaDestination},
		{"results_grpc", func(t *testing.T) *destination { return resultsServerDestination(t, "testbed-"+runID) }},
	} {
		t.Run(dest.name, func(t *testing.T) {
			t.Parallel()
			runOutage(t, dest.start(t), currentScale(), runID)
		})
	}
}

func runOutage(t *testing.T, d *destination, sc scale, runID string) {
	began := time.Now()
	dir := t.TempDir()
	storageDir := filepath.Join(dir, "storage")
	healthPort, inPort, metricsPort := collectortest.FreePort(t), collectortest.FreePort(t), collectortest.FreePort(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config(d, sc.QueueBytes, healthPort, inPort, metricsPort, storageDir)), 0o600))
	env := append([]string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")}, d.env...)
	c := collectortest.StartEnv(t, dir, env, cfgPath)
	c.WaitHealthy(fmt.Sprintf("http://127.0.0.1:%d/", healthPort))
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)

	client := loadclient.New(loadclient.Config{
		URL: fmt.Sprintf("http://127.0.0.1:%d%s", inPort, d.path), RunID: runID, Rate: sc.Rate,
		ChunkSize: sc.ChunkSize, Duration: sc.Before + sc.Outage + sc.After, Encoding: d.encoding,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientDone := make(chan struct{})
	go client.Run(ctx, clientDone)
	defer func() { cancel(); <-clientDone }()
	seriesName := fmt.Sprintf("outage-%s-%s", d.name, sc.Name)
	obs := observe(seriesName, fmt.Sprintf("Outage of %s (%s, %s) at %d items/s, queue bound %d MiB", d.name, d.receiver, sc.Outage, sc.Rate, sc.QueueBytes>>20),
		c.Pid(), client, metricsURL, storageDir, sc.Sample)
	defer obs.stop()

	time.Sleep(sc.Before) // schedules the outage; correctness never depends on it
	beforeOutage := client.AcceptedCount()
	require.Positive(t, beforeOutage, "the collector accepted uploads before the outage")
	d.down()
	obs.mark("down")
	t.Logf("%s down at %.1fs, %d accepted so far", d.name, obs.since(), beforeOutage)
	time.Sleep(sc.Outage)
	d.up()
	obs.mark("up")
	t.Logf("%s up at %.1fs, %d accepted so far; client %+v", d.name, obs.since(), client.AcceptedCount(), client.Stats())

	select {
	case <-clientDone:
	case <-time.After(sc.After + sc.Outage + 3*time.Minute):
		t.Fatalf("the client did not get all uploads accepted: %d of %d", client.AcceptedCount(), client.Generated())
	}
	require.NoError(t, client.Failure())
	obs.mark("stream end")
	accepted := client.AcceptedIDs()
	require.Len(t, accepted, client.Generated(), "every generated item is eventually accepted")

	// Drain: every accepted id arrives, then the queue is empty and the record count settles (late replays of
	// the persistent queue would add duplicates).
	readCtx, readCancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer readCancel()
	arrivals.WaitAll(t, readCtx, d.arrived, accepted, 5*time.Minute)
	obs.mark("all arrived")
	perID, _ := arrivals.Settle(t, readCtx, d.arrived, metricsURL, d.name, 2*time.Minute)
	obs.mark("drained")
	timeline := obs.stop()
	res := summarize(d, sc, timeline, client, arrivals.Count(accepted, perID), began)

	t.Logf("%s, %s scale: %d items at %d/s, %s outage; queue bound %d bytes, peak queue %d bytes (%.0f%%), peak storage on disk %.1f MB",
		d.name, sc.Name, res.Accepted, sc.Rate, sc.Outage, res.QueueCapacity, res.PeakQueue, 100*float64(res.PeakQueue)/float64(res.QueueCapacity), res.PeakDiskMB)
	t.Logf("pushed back: first 503 %.1fs into the outage, %d 503s in all; caught up %.1fs and all arrived %.1fs after the recovery; accepted %d, arrived %d distinct in %d records, duplicates %d; peak RSS %.0f MB",
		res.FirstPushBackS, res.Client.Status503, res.CatchUpS, res.DrainS, res.Accepted, res.Distinct, res.StoredLines, res.Duplicates, res.PeakRSSMB)

	assert.Empty(t, res.Lost, "accepted items that never arrived in %s", d.name)
	assert.Empty(t, res.Foreign, "items in %s that were never generated", d.name)
	assert.LessOrEqual(t, res.PeakQueue, res.QueueCapacity, "the queue stays within its configured bound")
	assert.Equal(t, sc.QueueBytes, res.QueueCapacity, "the queue's capacity is the configured one")
	// Back-pressure: the outage outlasts the queue, so the receiver must refuse with 503 rather than drop.
	assert.Positive(t, res.Client.Status503, "the receiver pushed back once the queue was full")
	assert.Greater(t, res.FirstPushBackS, 0.0, "the push-back began after the outage began")
	assert.GreaterOrEqual(t, res.PeakQueue, res.QueueCapacity/2, "the queue filled up before the receiver pushed back")
	// The queue is bounded in bytes of requests; bbolt stores them with page overhead and does not shrink its
	// file, so the file may be larger than the bound, but by a bounded factor.
	assert.LessOrEqual(t, res.PeakDiskMB, diskBoundMB(sc.QueueBytes), "the queue's storage on disk stays bounded")

	if out := procsample.ResultsDir(); out != "" {
		require.NoError(t, timeline.Collector.Write(out))
	}
	writeResult(t, seriesName, res)
}

// writeResult stores a run's result for the suite (procsample.WriteResult).
func writeResult(t *testing.T, name string, v any) {
	path, err := procsample.WriteResult(name, v)
	require.NoError(t, err)
	if path != "" {
		t.Logf("wrote %s", path)
	}
}

// diskBoundMB is the most the file_storage directory may hold for a queue bounded at queueBytes: bbolt's pages
// are half full at worst after splits, its file grows in steps, and the queue's metadata is small.
func diskBoundMB(queueBytes int64) float64 {
	return 3*float64(queueBytes)/(1<<20) + 32
}

func config(d *destination, queueBytes int64, healthPort, inPort, metricsPort int, storageDir string) string {
	return fmt.Sprintf(`
extensions:
  health_check:
    endpoint: 127.0.0.1:%d
  file_storage:
    directory: %s
    create_directory: true
receivers:
  %s
exporters:
  %s
    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 1s
      max_elapsed_time: 0s
    sending_queue:
      storage: file_storage
      sizer: bytes
      queue_size: %d
service:
  extensions: [health_check, file_storage]
  pipelines:
    logs:
      receivers: [%s]
      exporters: [%s]
  # Info: exporterhelper logs each failed attempt it will retry only at info, and that is the one account of why
  # a queue does not drain (a run of the suite once saw the s3 queue stay full after MinIO was back).
  telemetry:
    logs:
      level: info
%s`, healthPort, storageDir, d.receiverConfig(inPort), d.exporter, queueBytes, d.receiver, d.name, collectortest.MetricsTelemetry(metricsPort))
}
