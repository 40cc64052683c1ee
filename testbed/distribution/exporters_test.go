// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

// s3Lines reads every line of every object in bucket.
func s3Lines(t *testing.T, client *s3.Client, bucket string) []map[string]any {
	ctx := context.Background()
	var out []map[string]any
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	for _, obj := range list.Contents {
		got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: obj.Key})
		require.NoError(t, err)
		var r io.Reader = got.Body
		if strings.HasSuffix(*obj.Key, ".gz") {
			r, err = gzip.NewReader(got.Body)
			require.NoError(t, err)
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var line map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line), *obj.Key)
			out = append(out, line)
		}
		require.NoError(t, sc.Err())
		got.Body.Close()
	}
	return out
}

// TestBinaryExportsToS3AndKafka runs the distribution with the s3 and kafka exporters, each on a persistent
// queue, against a real MinIO and a Kafka-protocol broker, and reads the records back from both.
func TestBinaryExportsToS3AndKafka(t *testing.T) {
	minio := miniotest.Start(t)
	minio.CreateBucket("policy-results")
	kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "policy-results"))
	require.NoError(t, err)
	defer kafka.Close()

	dir := t.TempDir()
	extra := fmt.Sprintf(`
exporters:
  s3:
    s3uploader:
      endpoint: %s
      region: %s
      s3_bucket: policy-results
      s3_force_path_style: true
    sending_queue:
      storage: file_storage
  kafka:
    brokers: [%q]
    logs:
      topic: policy-results
    sending_queue:
      storage: file_storage
service:
  pipelines:
    logs:
      exporters: [durable_file, s3, kafka, policy_metrics]
`, minio.Endpoint(), miniotest.Region, kafka.ListenAddrs()[0])
	c, p := start(t, dir, extra, "KUBECONFIG="+dir+"/no-kubeconfig",
		"AWS_ACCESS_KEY_ID="+minio.AccessKey, "AWS_SECRET_ACCESS_KEY="+minio.SecretKey)
	defer c.Stop()

	results := []policyresult.Result{sampleResult("web-1"), sampleResult("web-2"), sampleResult("web-3")}
	var wantKeys []string
	for i := range results {
		wantKeys = append(wantKeys, results[i].Key())
	}
	slices.Sort(wantKeys)
	sendOTLP(t, p.HTTP, results...)

	keysOf := func(lines []map[string]any) []string {
		var keys []string
		for _, l := range lines {
			if l[recordjson.FieldEventName] == policyresult.EventResult {
				keys = append(keys, l[policyresult.AttrResultKey].(string))
			}
		}
		slices.Sort(keys)
		return keys
	}
	var lines []map[string]any
	collectortest.Eventually(t, 30*time.Second, func() error {
		if lines = s3Lines(t, minio.Client(), "policy-results"); len(keysOf(lines)) < len(results) {
			return fmt.Errorf("%d of %d results in MinIO", len(keysOf(lines)), len(results))
		}
		return nil
	})
	assert.Equal(t, wantKeys, keysOf(lines), "each result exactly once")
	assert.Equal(t, "laptop", lines[0][policyresult.AttrClusterName], "resource attributes are fields of the line")

	consumer, err := kgo.NewClient(kgo.SeedBrokers(kafka.ListenAddrs()...), kgo.ConsumeTopics("policy-results"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	var gotKeys []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(gotKeys) < len(results) {
		fetches := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "%d of %d results consumed", len(gotKeys), len(results))
		fetches.EachRecord(func(r *kgo.Record) {
			var line map[string]any
			require.NoError(t, json.Unmarshal(r.Value, &line))
			if line[recordjson.FieldEventName] == policyresult.EventResult {
				assert.Equal(t, line[policyresult.AttrResultKey], string(r.Key), "keyed by the result key")
				gotKeys = append(gotKeys, string(r.Key))
			}
		})
	}
	slices.Sort(gotKeys)
	assert.Equal(t, wantKeys, gotKeys)
}
