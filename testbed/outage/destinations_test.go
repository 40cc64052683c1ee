// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package outage

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"
)

// destination is one backend the collector exports to, which the test can take down and bring back with its
// data, and read back.
type destination struct {
	name string
	// exporter is the exporter's configuration (under `exporters:`), without its sending_queue, which the test
	// adds; receiver is the receiver taking the client's uploads, and path the client's URL path.
	exporter, receiver, path string
	encoding                 loadclient.Encoding
	env                      []string
	down, up                 func()
	arrived                  arrivals.Reader
	// duplicatesVisible is false where the store keeps one row per id, so that a duplicate cannot be counted.
	duplicatesVisible bool
}

// receiverConfig is the receiver section for the client's uploads on port.
func (d *destination) receiverConfig(port int) string {
	if d.receiver == "otlp" {
		return fmt.Sprintf("otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:%d", port)
	}
	return fmt.Sprintf("decision_logs:\n    cluster_name: outage-test\n    opa:\n      endpoint: 127.0.0.1:%d", port)
}

// minioDestination: decisions from OPA uploads to the s3 exporter; MinIO is stopped and started again on the
// same address and data directory.
func minioDestination(t *testing.T) *destination {
	minio := miniotest.Start(t)
	const bucket = "decisions"
	minio.CreateBucket(bucket)
	reader := arrivals.NewBucketReader(minio.Client(), bucket)
	return &destination{
		name: "s3", receiver: "decision_logs", path: "/logs", encoding: loadclient.OPADecisions,
		duplicatesVisible: true,
		exporter: fmt.Sprintf(`s3:
    s3uploader:
      endpoint: %s
      region: %s
      s3_bucket: %s
      s3_force_path_style: true
      compression: gzip
    timeout: 5s`, minio.Endpoint(), miniotest.Region, bucket),
		env: []string{
			"AWS_ACCESS_KEY_ID=" + minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + minio.SecretKey,
			"AWS_EC2_METADATA_DISABLED=true",
		},
		down: minio.Stop,
		up:   minio.Restart,
		arrived: func(ctx context.Context) (map[string]int, int, error) {
			if err := reader.Refresh(ctx); err != nil {
				return nil, 0, err
			}
			perID, lines, _ := reader.Counts()
			return perID, lines, nil
		},
	}
}

// kafkaDestination: decisions from OPA uploads to the kafka exporter; the kfake broker (franz-go's
// Kafka-protocol broker, in this process) is closed and started again on the same port with its data directory.
func kafkaDestination(t *testing.T) *destination {
	const topic = "policy-decisions"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dataDir := t.TempDir()
	var broker *kfake.Cluster
	start := func() {
		collectortest.Eventually(t, 30*time.Second, func() error {
			broker, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic), kfake.Ports(port),
				kfake.DataDir(dataDir))
			return err
		})
	}
	start()
	t.Cleanup(func() {
		if broker != nil {
			broker.Close()
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var reader *arrivals.TopicReader
	return &destination{
		name: "kafka", receiver: "decision_logs", path: "/logs", encoding: loadclient.OPADecisions,
		duplicatesVisible: true,
		exporter: fmt.Sprintf(`kafka:
    brokers: [%q]
    logs:
      topic: %s
    timeout: 5s`, addr, topic),
		down: func() { broker.Close(); broker = nil },
		up:   start,
		arrived: func(context.Context) (map[string]int, int, error) {
			if reader == nil {
				if reader, err = arrivals.NewTopicReader([]string{addr}, topic); err != nil {
					return nil, 0, err
				}
				t.Cleanup(reader.Close)
			}
			if err := reader.Refresh(500 * time.Millisecond); err != nil {
				return nil, 0, err
			}
			perID, n := reader.Counts()
			return perID, n, nil
		},
	}
}

// resultsServerDestination: results over OTLP/HTTP to the results_grpc exporter; bin/results-server (SQLite) is
// stopped with SIGTERM and started again on the same port and database.
func resultsServerDestination(t *testing.T, cluster string) *destination {
	bin := filepath.Join(filepath.Dir(collectortest.Binary(t)), "results-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (run make build)", bin, err)
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "results.db")
	addr := fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t))
	var server *exec.Cmd
	exited := make(chan struct{})
	start := func() {
		server = exec.Command(bin, "serve", "--listen", addr, "--db", "sqlite://"+dbPath, "--log-level", "warn")
		log, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		server.Stdout, server.Stderr = log, log
		require.NoError(t, server.Start())
		exited = make(chan struct{})
		go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); log.Close(); close(done) }(server, exited)
		collectortest.Eventually(t, 30*time.Second, func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			return c.Close()
		})
	}
	stop := func() {
		if server == nil {
			return
		}
		_ = server.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = server.Process.Kill()
			<-exited
		}
		server = nil
	}
	start()
	t.Cleanup(stop)
	return &destination{
		name: "results_grpc", receiver: "otlp", path: "/v1/logs", encoding: loadclient.OTLPResults,
		exporter: fmt.Sprintf(`results_grpc:
    endpoint: %s
    tls:
      insecure: true
    timeout: 5s`, addr),
		down: stop,
		up:   start,
		arrived: func(ctx context.Context) (map[string]int, int, error) {
			perID, err := arrivals.ResultKeys(ctx, dbPath, cluster)
			return perID, len(perID), err
		},
	}
}
