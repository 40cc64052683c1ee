// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package crash is the crash test of the distribution: an OPA-like client streams decisions at a fixed rate
// into the decision_logs receiver while the collector, exporting to MinIO through the s3 exporter on a persistent
// sending_queue, is killed with SIGKILL several times and restarted on the same data directory. Every decision
// the collector answered 200 for must end up in MinIO; duplicates are counted and reported. See README.md.
package crash

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// scale of one run: TESTBED_SCALE=full for `make testbed`, a short run otherwise.
type scale struct {
	Name      string        `json:"scale"`
	Rate      int           `json:"rate_per_s"`
	ChunkSize int           `json:"events_per_upload"`
	Duration  time.Duration `json:"-"`
	Kills     int           `json:"kills"`
}

func currentScale() scale {
	if os.Getenv("TESTBED_SCALE") == "full" {
		return scale{Name: "full", Rate: 1000, ChunkSize: 50, Duration: 2 * time.Minute, Kills: 6}
	}
	return scale{Name: "short", Rate: 200, ChunkSize: 20, Duration: 15 * time.Second, Kills: 3}
}

// result is what a run reports (t.Logf, and $TESTBED_RESULTS_DIR/crash-<scale>.json when set).
type result struct {
	scale
	DurationS float64 `json:"stream_s"`
	Date      string  `json:"date"`
	Generated int     `json:"generated"`
	arrivals.Tally
	Objects   int              `json:"objects"`
	Restarts  []float64        `json:"restart_s"`   // kill to healthy, per kill
	DrainS    float64          `json:"drain_s"`     // end of the stream to everything stored
	PeakRSSMB float64          `json:"peak_rss_mb"` // the largest of the collector processes'
	WallS     float64          `json:"wall_s"`
	Client    loadclient.Stats `json:"client"`
}

func config(healthPort, opaPort, metricsPort int, storageDir, endpoint, bucket string) string {
	return fmt.Sprintf(`
extensions:
  health_check:
    endpoint: 127.0.0.1:%d
  file_storage:
    directory: %s
    create_directory: true
receivers:
  decision_logs:
    cluster_name: crash-test
    opa:
      endpoint: 127.0.0.1:%d
exporters:
  s3:
    s3uploader:
      endpoint: %s
      region: %s
      s3_bucket: %s
      s3_force_path_style: true
      compression: gzip
    timeout: 10s
    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 1s
      max_elapsed_time: 0s
    sending_queue:
      storage: file_storage
      queue_size: 100000
service:
  extensions: [health_check, file_storage]
  pipelines:
    logs:
      receivers: [decision_logs]
      exporters: [s3]
  telemetry:
    logs:
      level: info
%s`, healthPort, storageDir, opaPort, endpoint, miniotest.Region, bucket, collectortest.MetricsTelemetry(metricsPort))
}

func TestCrashNothingLost(t *testing.T) {
	sc := currentScale()
	began := time.Now()
	minio := miniotest.Start(t) // skips under -short
	const bucket = "decisions"
	minio.CreateBucket(bucket)

	dir := t.TempDir()
	healthPort, opaPort, metricsPort := collectortest.FreePort(t), collectortest.FreePort(t), collectortest.FreePort(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config(healthPort, opaPort, metricsPort,
		filepath.Join(dir, "storage"), minio.Endpoint(), bucket)), 0o600))
	env := []string{
		"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig"),
		"AWS_ACCESS_KEY_ID=" + minio.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + minio.SecretKey,
		"AWS_EC2_METADATA_DISABLED=true",
	}
	healthURL := fmt.Sprintf("http://127.0.0.1:%d/", healthPort)
	start := func() *collectortest.Collector {
		c := collectortest.StartEnv(t, dir, env, cfgPath)
		c.WaitHealthy(healthURL)
		return c
	}
	c := start()
	// The collector process changes at every restart; the sampler follows it.
	var collectorPid atomic.Int64
	collectorPid.Store(int64(c.Pid()))
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	sampler := procsample.Start("crash-"+sc.Name,
		fmt.Sprintf("Crash: decision_logs → s3 at %d decisions/s, %d SIGKILLs", sc.Rate, sc.Kills),
		func() int { return int(collectorPid.Load()) }, metricsURL, procsample.Options{
			Counter: "otelcol_exporter_sent_log_records", Gauges: []string{"otelcol_exporter_queue_size"},
		})
	var marks []procsample.Mark

	runID := loadclient.NewRunID()
	client := loadclient.New(loadclient.Config{
		URL: fmt.Sprintf("http://127.0.0.1:%d/logs", opaPort), RunID: runID, Rate: sc.Rate, ChunkSize: sc.ChunkSize,
		Duration: sc.Duration, Encoding: loadclient.OPADecisions,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientDone := make(chan struct{})
	streamStart := time.Now()
	go client.Run(ctx, clientDone)
	defer func() { cancel(); <-clientDone }()

	// Kill at evenly spaced moments of the stream, each time only once the restarted collector accepted an
	// upload (so every kill hits a collector that is taking data), then restart on the same directory and ports.
	var restarts []float64
	for k := 1; k <= sc.Kills; k++ {
		at := streamStart.Add(sc.Duration * time.Duration(k) / time.Duration(sc.Kills+1))
		time.Sleep(time.Until(at)) // schedules the kill; correctness never depends on it
		before := client.AcceptedCount()
		collectortest.Eventually(t, 60*time.Second, func() error {
			if n := client.AcceptedCount(); n <= before && k > 1 {
				return fmt.Errorf("the restarted collector accepted no upload yet (%d accepted)", n)
			}
			return nil
		})
		pid := c.Pid()
		killedAt := time.Now()
		marks = append(marks, procsample.Mark{Name: fmt.Sprintf("kill %d", k), T: sampler.Elapsed()})
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		collectortest.Eventually(t, 30*time.Second, func() error {
			if !processGone(pid) {
				return fmt.Errorf("collector %d still running after SIGKILL", pid)
			}
			return nil
		})
		t.Logf("kill %d at %.1fs: %d decisions accepted so far", k, time.Since(streamStart).Seconds(), client.AcceptedCount())
		c = start()
		collectorPid.Store(int64(c.Pid()))
		restarts = append(restarts, time.Since(killedAt).Seconds())
	}

	// The client uploads until every generated chunk was answered 200.
	generated := client.Generated()
	select {
	case <-clientDone:
	case <-time.After(sc.Duration + 3*time.Minute):
		t.Fatalf("the client did not get all uploads accepted: %d of %d accepted", client.AcceptedCount(), generated)
	}
	require.NoError(t, client.Failure())
	streamEnd := time.Now()
	accepted := client.AcceptedIDs()
	require.Len(t, accepted, generated, "every generated decision is eventually accepted")

	// Drain: poll MinIO until every accepted id is stored, then until neither the queue holds anything nor the
	// number of stored lines grows (late replays of the persistent queue would add duplicates).
	reader := arrivals.NewBucketReader(minio.Client(), bucket)
	var objects int
	read := func(ctx context.Context) (map[string]int, int, error) {
		if err := reader.Refresh(ctx); err != nil {
			return nil, 0, err
		}
		perID, lines, n := reader.Counts()
		objects = n
		return perID, lines, nil
	}
	readCtx, readCancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer readCancel()
	arrivals.WaitAll(t, readCtx, read, accepted, 3*time.Minute+sc.Duration)
	perID, _ := arrivals.Settle(t, readCtx, read, metricsURL, "s3", 2*time.Minute)
	drain := time.Since(streamEnd)
	series := sampler.Stop()
	series.Marks = marks

	// Nothing lost, nothing foreign.
	tally := arrivals.Count(accepted, perID)
	require.Empty(t, tally.Lost, "accepted decisions missing from MinIO")
	require.Empty(t, tally.Foreign, "decisions in MinIO that were never generated")
	require.Equal(t, len(accepted), tally.Accepted)

	res := result{
		scale: sc, DurationS: sc.Duration.Seconds(), Date: time.Now().UTC().Format(time.DateOnly),
		Generated: generated, Tally: tally, Objects: objects,
		Restarts: restarts, DrainS: round(drain.Seconds()), WallS: round(time.Since(began).Seconds()),
		Client: client.Stats(),
	}
	for i := range res.Restarts {
		res.Restarts[i] = round(res.Restarts[i])
	}
	t.Logf("scale %s: %d decisions at %d/s in uploads of %d, %d SIGKILLs (restart to healthy: %v s)",
		sc.Name, generated, sc.Rate, sc.ChunkSize, sc.Kills, res.Restarts)
	t.Logf("accepted %d, stored %d lines in %d objects, %d distinct ids: lost 0, duplicates %d lines of %d ids (rate %.4f%%)",
		res.Accepted, res.StoredLines, res.Objects, res.Distinct, res.Duplicates, res.DuplicatedIDs, 100*res.DuplicateRate)
	t.Logf("client: %+v; drained %.1fs after the stream ended; wall %.1fs", res.Client, res.DrainS, res.WallS)

	res.PeakRSSMB = series.PeakRSSMB
	require.NoError(t, series.Write(procsample.ResultsDir()))
	path, err := procsample.WriteResult("crash-"+sc.Name, res)
	require.NoError(t, err)
	if path != "" {
		t.Logf("wrote %s", path)
	}
}

func round(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
