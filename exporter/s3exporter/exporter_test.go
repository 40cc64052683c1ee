// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

var (
	nine = time.Date(2026, 3, 7, 9, 15, 0, 0, time.UTC)
	ten  = time.Date(2026, 3, 7, 10, 1, 2, 500_000_000, time.UTC)
)

func TestExportWritesPartitionedJSONLines(t *testing.T) {
	for _, tt := range []struct{ compression, ext, encoding string }{
		{CompressionGzip, ".jsonl.gz", "gzip"},
		{CompressionZstd, ".jsonl.zst", "zstd"},
		{CompressionNone, ".jsonl", ""},
	} {
		t.Run(tt.compression, func(t *testing.T) {
			srv := startMinIO(t)
			cfg := testConfig(srv)
			cfg.S3Uploader.Compression = tt.compression
			cfg.S3Uploader.S3Prefix = "evidence/"
			cfg.PartitionAttributes = []string{policyresult.AttrClusterName, policyresult.AttrSource}
			exp := startExporter(t, cfg, nil)

			ld := plog.NewLogs()
			addResults(ld, "prod-eu-1", "kyverno", nine, 0, 3)
			addResults(ld, "prod-eu-1", "kyverno", ten, 3, 2)
			addResults(ld, "prod-us-1", "trivy", nine, 5, 1)
			addDecisions(ld, "prod-eu-1", nine, "d-1", "d-2")
			require.NoError(t, exp.ConsumeLogs(context.Background(), ld))

			objs := listObjects(t, srv.Client())
			wantDirs := []struct {
				dir   string
				lines int
			}{
				{"evidence/k8s_cluster_name=prod-eu-1/policy_source=kyverno/date=2026-03-07/hour=09", 3},
				{"evidence/k8s_cluster_name=prod-eu-1/policy_source=kyverno/date=2026-03-07/hour=10", 2},
				{"evidence/k8s_cluster_name=prod-eu-1/policy_source=opa/date=2026-03-07/hour=09", 2},
				{"evidence/k8s_cluster_name=prod-us-1/policy_source=trivy/date=2026-03-07/hour=09", 1},
			}
			require.Len(t, objs, len(wantDirs))
			byDir := map[string]object{}
			var stored int64
			for _, o := range objs {
				dir := path.Dir(o.key)
				byDir[dir] = o
				sum := sha256.Sum256(o.lines)
				assert.Equal(t, dir+"/"+hex.EncodeToString(sum[:])[:32]+tt.ext, o.key, "key is the hash of the lines")
				assert.Equal(t, "application/x-ndjson", o.contentType)
				assert.Equal(t, tt.encoding, o.contentEncoding)
				stored += o.size
			}
			for _, w := range wantDirs {
				require.Contains(t, byDir, w.dir)
				assert.Len(t, byDir[w.dir].parse(t), w.lines, w.dir)
			}

			results := byDir[wantDirs[0].dir].parse(t)
			for i, line := range results {
				assert.Equal(t, "2026-03-07T09:15:00Z", line["time"])
				assert.Equal(t, policyresult.EventResult, line["event_name"])
				assert.Equal(t, "prod-eu-1", line[policyresult.AttrClusterName])
				assert.Equal(t, "kyverno", line[policyresult.AttrSource])
				assert.Equal(t, "fail", line[policyresult.AttrResult])
				assert.Equal(t, fmt.Sprintf("cart-%d", i), line[policyresult.AttrResourceName])
				assert.Len(t, line[policyresult.AttrResultID], 32)
				b, ok := line["body"].(map[string]any)
				require.True(t, ok, "body is an object: %v", line["body"])
				assert.Equal(t, "restrict-seccomp-strict", b["policy"])
				assert.Equal(t, map[string]any{"controls": "Seccomp", "standard": "restricted", "version": "latest"}, b["properties"])
			}
			assert.Equal(t, "2026-03-07T10:01:02.5Z", byDir[wantDirs[1].dir].parse(t)[0]["time"])
			decisions := byDir[wantDirs[2].dir].parse(t)
			for i, line := range decisions {
				assert.Equal(t, policyresult.EventDecision, line["event_name"])
				assert.Equal(t, fmt.Sprintf("d-%d", i+1), line[policyresult.AttrDecisionID])
				assert.Equal(t, false, line[policyresult.AttrDecisionAllowed])
				assert.Equal(t, []any{"image from untrusted registry"}, line[policyresult.AttrDecisionMessages])
				assert.Equal(t, fmt.Sprintf(`{"decision_id":"d-%d"}`, i+1), line["body"])
			}
			assert.Equal(t, "prod-us-1", byDir[wantDirs[3].dir].parse(t)[0][policyresult.AttrClusterName])

			metadatatest.AssertEqualExporterS3Objects(t, exp.telemetry, []metricdata.DataPoint[int64]{{Value: 4}}, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
			metadatatest.AssertEqualExporterS3Bytes(t, exp.telemetry, []metricdata.DataPoint[int64]{{Value: stored}}, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		})
	}
}

func TestServerSideEncryption(t *testing.T) {
	for _, tt := range []struct {
		name, sse, kmsKey string
	}{
		{"SSE-S3", SSES3, ""},
		{"SSE-KMS", SSEKMS, miniotest.KMSKeyID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startMinIO(t)
			cfg := testConfig(srv)
			cfg.S3Uploader.ServerSideEncryption = tt.sse
			cfg.S3Uploader.SSEKMSKeyID = tt.kmsKey
			exp := startExporter(t, cfg, nil)
			ld := plog.NewLogs()
			addResults(ld, "prod-eu-1", "kyverno", nine, 0, 10)
			require.NoError(t, exp.ConsumeLogs(context.Background(), ld))

			objs := listObjects(t, srv.Client())
			require.Len(t, objs, 1)
			assert.Len(t, objs[0].parse(t), 10)
			head, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(objs[0].key)})
			require.NoError(t, err)
			assert.Equal(t, types.ServerSideEncryption(tt.sse), head.ServerSideEncryption)
			if tt.kmsKey != "" {
				assert.Contains(t, aws.ToString(head.SSEKMSKeyId), tt.kmsKey)
			}
		})
	}
}

func TestRetriedBatchOverwritesItsObject(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	exp := startExporter(t, cfg, nil)
	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 100)
	addDecisions(ld, "prod-eu-1", nine, "d-1")

	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	first := listObjects(t, srv.Client())
	require.Len(t, first, 1)

	again := plog.NewLogs()
	ld.CopyTo(again)
	require.NoError(t, exp.ConsumeLogs(context.Background(), again))
	second := listObjects(t, srv.Client())
	require.Len(t, second, 1)
	assert.Equal(t, first[0].key, second[0].key)
	assert.Equal(t, first[0].etag, second[0].etag, "the compressed bytes are the same")
	assert.Len(t, second[0].parse(t), 101)
	metadatatest.AssertEqualExporterS3Objects(t, exp.telemetry, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}

func TestLargeObjectIsAMultipartUpload(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	cfg.S3Uploader.Compression = CompressionNone
	cfg.MultipartThreshold = minPartSize
	cfg.MultipartPartSize = minPartSize
	var counter requestCounter
	exp := startExporter(t, cfg, countRequests(&counter))

	const n = 12_000 // about 1.2 KB each: 13-14 MiB, three parts of 5 MiB
	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, n)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))

	objs := listObjects(t, srv.Client())
	require.Len(t, objs, 1)
	require.Greater(t, objs[0].size, int64(2*minPartSize))
	require.LessOrEqual(t, objs[0].size, int64(3*minPartSize))
	assert.True(t, strings.HasSuffix(objs[0].etag, `-3"`), "a multipart ETag names its part count: %s", objs[0].etag)
	assert.Equal(t, map[string]int{"CreateMultipartUpload": 1, "UploadPart": 3, "CompleteMultipartUpload": 1}, counter.counts())
	lines := objs[0].parse(t)
	require.Len(t, lines, n)
	for i, line := range lines {
		require.Equal(t, fmt.Sprintf("cart-%d", i), line[policyresult.AttrResourceName])
	}
}

func TestAccessDeniedIsPermanentAndNotRetried(t *testing.T) {
	srv := startMinIO(t)
	srv.CreateUser("auditor", "auditor-secret-1", "readonly")
	setCredentials(t, "auditor", "auditor-secret-1")
	cfg := testConfig(srv)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	var counter requestCounter
	exp := startExporter(t, cfg, countRequests(&counter))

	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 10)
	start := time.Now()
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err), "%v", err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, err.Error(), "uploading s3://policy-results/date=2026-03-07/hour=09/")
	assert.Contains(t, err.Error(), "failed with AccessDenied (HTTP 403)")
	assert.NotContains(t, err.Error(), "auditor-secret-1")
	assert.Equal(t, map[string]int{"PutObject": 1}, counter.counts(), "one attempt, no retries")
	assert.Empty(t, listObjects(t, srv.Client()))
}

// TestMissingBucketIsRetriedUntilCreated: a bucket an operator creates after the collector started (Crossplane,
// Terraform, a GitOps sync) gets the batch that waited for it; NoSuchBucket is retried, not dropped.
func TestMissingBucketIsRetriedUntilCreated(t *testing.T) {
	srv := startMinIO(t)
	const bucket = "created-later"
	cfg := testConfig(srv)
	cfg.S3Uploader.S3Bucket = bucket
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 30 * time.Second
	var counter requestCounter
	creator := &createBucketOnMiss{create: func() error {
		_, err := srv.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		return err
	}}
	exp := startExporter(t, cfg, func(next s3.HTTPClient) s3.HTTPClient {
		creator.next = next
		return countRequests(&counter)(creator)
	})

	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 3)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	require.NoError(t, creator.err)
	require.True(t, creator.missed, "the first attempt found no bucket")
	assert.Equal(t, map[string]int{"PutObject": 2}, counter.counts(), "refused once, stored on the retry")
	out, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.Len(t, out.Contents, 1)
	assert.True(t, strings.HasPrefix(aws.ToString(out.Contents[0].Key), "date=2026-03-07/hour=09/"), aws.ToString(out.Contents[0].Key))
}

// createBucketOnMiss creates the bucket after the first answer that it does not exist, as an operator would
// while the exporter retries.
type createBucketOnMiss struct {
	next   s3.HTTPClient
	create func() error
	missed bool
	err    error
}

func (c *createBucketOnMiss) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(r)
	if err == nil && resp.StatusCode == http.StatusNotFound && !c.missed {
		c.missed = true
		c.err = c.create()
	}
	return resp, err
}

func TestMissingBucketIsRetryable(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	cfg.S3Uploader.S3Bucket = "no-such-bucket"
	exp := startExporter(t, cfg, nil)
	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 1)
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "uploading s3://no-such-bucket/date=2026-03-07/hour=09/")
	assert.Contains(t, err.Error(), "StatusCode: 404")
	assert.Contains(t, err.Error(), "api error NoSuchBucket")
}

func TestServerDownIsRetryable(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	exp := startExporter(t, cfg, nil)
	srv.Stop()
	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 1)
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.Contains(t, err.Error(), "connection refused")
}

// failSecondPart loses the connection on a multipart upload's second part, as a network failure would.
type failSecondPart struct{ next s3.HTTPClient }

func (f failSecondPart) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2" {
		return nil, syscall.ECONNRESET
	}
	return f.next.Do(r)
}

func TestFailedMultipartUploadIsAbortedAndRetryable(t *testing.T) {
	srv := startMinIO(t)
	cfg := testConfig(srv)
	cfg.S3Uploader.Compression = CompressionNone
	cfg.MultipartThreshold = minPartSize
	cfg.MultipartPartSize = minPartSize
	var counter requestCounter
	count := countRequests(&counter)
	exp := startExporter(t, cfg, func(next s3.HTTPClient) s3.HTTPClient { return count(failSecondPart{next}) })

	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 12_000)
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Equal(t, 1, counter.counts()["AbortMultipartUpload"])
	assert.Zero(t, counter.counts()["CompleteMultipartUpload"])

	pending, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(testBucket)})
	require.NoError(t, err)
	assert.Empty(t, pending.Uploads, "no parts left behind")
	assert.Empty(t, listObjects(t, srv.Client()))
}
