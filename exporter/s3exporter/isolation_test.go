// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"context"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// recordsByOutcome is exporter_s3_records as the tests expect it.
func recordsByOutcome(counts map[string]int64) []metricdata.DataPoint[int64] {
	var out []metricdata.DataPoint[int64]
	for _, outcome := range []string{"stored", "retryable_failure", "permanent_failure"} {
		if n, ok := counts[outcome]; ok {
			out = append(out, metricdata.DataPoint[int64]{Value: n, Attributes: attribute.NewSet(attribute.String("outcome", outcome))})
		}
	}
	return out
}

// TestHostilePartitionValueIsStoredUnderAValidKey: a record whose policy.source (a partition of the shipped
// example config) is 2,000 bytes of attacker text is stored, with the legitimate records of its batch, under a
// key S3 accepts. Before, its key was longer than S3's 1,024 bytes, the store refused it permanently, and the
// whole batch was dropped: the 100 legitimate records were never uploaded.
func TestHostilePartitionValueIsStoredUnderAValidKey(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	cfg.S3Uploader.S3Prefix = "policy"
	cfg.PartitionAttributes = []string{policyresult.AttrClusterName, policyresult.AttrSource}
	exp := startExporter(t, cfg, nil)

	hostile := strings.Repeat("../=/é\x00%~ ", 200)[:2000]
	ld := plog.NewLogs()
	// First, so that before, its refusal stopped the batch before the legitimate records' object.
	addResults(ld, "prod-eu-1", hostile, nine, 0, 1)
	addResults(ld, "prod-eu-1", "kyverno", nine, 1, 100)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))

	objs := listObjects(t, srv.Client())
	require.Len(t, objs, 2)
	dirs := map[string][]map[string]any{}
	for _, o := range objs {
		assert.LessOrEqual(t, len(o.key), 1024)
		for seg := range strings.SplitSeq(o.key, "/") {
			assert.LessOrEqual(t, len(seg), 255)
		}
		dirs[path.Dir(o.key)] = o.parse(t)
	}
	short, _ := appendPartitionValue(nil, hostile, cfg.PartitionValueMaxBytes)
	require.Contains(t, string(short), "~")
	assert.Len(t, dirs["policy/k8s_cluster_name=prod-eu-1/policy_source=kyverno/date=2026-03-07/hour=09"], 100)
	lines := dirs["policy/k8s_cluster_name=prod-eu-1/policy_source="+string(short)+"/date=2026-03-07/hour=09"]
	require.Len(t, lines, 1)
	assert.Equal(t, hostile, lines[0][policyresult.AttrSource], "the line keeps the whole value")

	metadatatest.AssertEqualExporterS3ShortenedPartitionValues(t, exp.telemetry, []metricdata.DataPoint[int64]{{Value: 1}},
		metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	metadatatest.AssertEqualExporterS3Records(t, exp.telemetry, recordsByOutcome(map[string]int64{"stored": 101}),
		metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}

// TestRefusedObjectDropsOnlyItsRecords: the store refuses one object of a batch for good (its credentials may
// not write under one partition); the records of that object are dropped and counted, the other objects of the
// batch, before and after it, are stored.
func TestRefusedObjectDropsOnlyItsRecords(t *testing.T) {
	srv := startMinIO(t)
	policy := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"Version": "2012-10-17", "Statement": [
		{"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": ["arn:aws:s3:::`+testBucket+`/*"]},
		{"Effect": "Deny", "Action": ["s3:PutObject"], "Resource": ["arn:aws:s3:::`+testBucket+`/policy_source=forbidden/*"]}]}`), 0o600))
	srv.MC("admin", "policy", "create", "test", "all-but-forbidden", policy)
	srv.CreateUser("writer", "writer-secret-1", "all-but-forbidden")
	setCredentials(t, "writer", "writer-secret-1")
	cfg := testConfig(srv)
	cfg.PartitionAttributes = []string{policyresult.AttrSource}
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	var counter requestCounter
	exp := startExporter(t, cfg, countRequests(&counter))

	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 10)
	addResults(ld, "prod-eu-1", "forbidden", nine, 10, 5)
	addResults(ld, "prod-eu-1", "trivy", nine, 15, 10)
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "5 of 25 records dropped: uploading s3://policy-results/policy_source=forbidden/date=2026-03-07/hour=09/")
	assert.Contains(t, err.Error(), "failed with AccessDenied (HTTP 403), which retrying cannot fix; the object's records are dropped")
	assert.Equal(t, map[string]int{"PutObject": 3}, counter.counts(), "each object once, none retried")

	objs := listObjects(t, srv.Client())
	require.Len(t, objs, 2)
	assert.Equal(t, "policy_source=kyverno/date=2026-03-07/hour=09", path.Dir(objs[0].key))
	assert.Len(t, objs[0].parse(t), 10)
	assert.Equal(t, "policy_source=trivy/date=2026-03-07/hour=09", path.Dir(objs[1].key))
	assert.Len(t, objs[1].parse(t), 10)
	metadatatest.AssertEqualExporterS3Records(t, exp.telemetry, recordsByOutcome(map[string]int64{"stored": 20, "permanent_failure": 5}),
		metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}

// slowDownOnce answers the first PutObject under one partition with S3's 503 SlowDown, as a throttled store
// would, and counts the PutObjects per partition.
type slowDownOnce struct {
	next      s3.HTTPClient
	partition string
	mu        sync.Mutex
	puts      map[string]int
}

func (s *slowDownOnce) Do(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPut {
		return s.next.Do(r)
	}
	dir := path.Dir(strings.TrimPrefix(r.URL.Path, "/"+testBucket+"/"))
	s.mu.Lock()
	s.puts[dir]++
	first := s.puts[dir] == 1
	s.mu.Unlock()
	if first && strings.HasPrefix(dir, s.partition) {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
			Header:  http.Header{"Content-Type": {"application/xml"}},
			Body:    io.NopCloser(strings.NewReader(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)),
			Request: r}, nil
	}
	return s.next.Do(r)
}

// TestRetryableFailureRetriesOnlyUnstoredObjects: an object that fails with a retryable error stops the batch
// there; the retry uploads that object and the ones after it, not the ones already stored.
func TestRetryableFailureRetriesOnlyUnstoredObjects(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	cfg.PartitionAttributes = []string{policyresult.AttrSource}
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	slow := &slowDownOnce{partition: "policy_source=trivy", puts: map[string]int{}}
	exp := startExporter(t, cfg, func(next s3.HTTPClient) s3.HTTPClient { slow.next = next; return slow })

	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 10)
	addResults(ld, "prod-eu-1", "trivy", nine, 10, 5)
	addResults(ld, "prod-eu-1", "kubescape", nine, 15, 7)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))

	assert.Equal(t, map[string]int{
		"policy_source=kyverno/date=2026-03-07/hour=09":   1,
		"policy_source=trivy/date=2026-03-07/hour=09":     2,
		"policy_source=kubescape/date=2026-03-07/hour=09": 1,
	}, slow.puts, "the stored object is not uploaded again; the one after the failure waits for the retry")
	objs := listObjects(t, srv.Client())
	require.Len(t, objs, 3)
	total := 0
	for _, o := range objs {
		total += len(o.parse(t))
	}
	assert.Equal(t, 22, total)
	metadatatest.AssertEqualExporterS3Records(t, exp.telemetry, recordsByOutcome(map[string]int64{"stored": 22, "retryable_failure": 12}),
		metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}
