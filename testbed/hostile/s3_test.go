// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
)

// s3KeyMax is S3's limit on an object key, in bytes.
const s3KeyMax = 1024

// TestS3PartitionFromTheInput: the s3 exporter partitioned by policy.source, as the shipped example does, and a
// client that sets policy.source (here over OTLP; a PolicyReport's author can set it too). A value of 2,000
// bytes made a key longer than S3 allows, and the permanent error dropped the whole batch, legitimate records
// included. Now the value is shortened with a hash, and every record is stored under a valid key.
func TestS3PartitionFromTheInput(t *testing.T) {
	minio := miniotest.Start(t) // skips under -short
	const bucket = "hostile"
	minio.CreateBucket(bucket)
	tg := StartDefault(t, fmt.Sprintf(`
exporters:
  s3:
    s3uploader:
      endpoint: %s
      region: %s
      s3_bucket: %s
      s3_prefix: policy
      s3_force_path_style: true
      compression: gzip
    partition_attributes: [k8s.cluster.name, policy.source]
    sending_queue:
      storage: file_storage
service:
  pipelines:
    logs:
      exporters: [durable_file, policy_metrics, s3]
`, minio.Endpoint(), miniotest.Region, bucket), "AWS_ACCESS_KEY_ID="+minio.AccessKey, "AWS_SECRET_ACCESS_KEY="+minio.SecretKey)

	batches := pick(5, 50)
	var keys []string
	r := tg.Attack("s3-partition-from-input", func() map[string]float64 {
		for b := range batches {
			// One batch: legitimate results, and results whose source is attacker text, some of it unsafe in keys.
			var results []policyresult.Result
			for i := range 10 {
				source := "kyverno"
				if i%2 == 1 {
					source = strings.Repeat("ä/../%~", 2000/10) + fmt.Sprint(i)
				}
				results = append(results, policyresult.Result{Cluster: "hostile", Source: source, Policy: "p", Rule: "r",
					Outcome: policyresult.OutcomeFail, State: policyresult.StateNew,
					Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d-%d", b, i)}})
			}
			for i := range results {
				keys = append(keys, results[i].Key())
			}
			postOTLP(t, tg, results)
		}
		read := arrivals.NewBucketReader(minio.Client(), bucket)
		tg.WaitBounded(60*time.Second, func() error {
			if err := read.Refresh(context.Background()); err != nil {
				return err
			}
			perID, _, _ := read.Counts()
			if missing := arrivals.Missing(keys, perID); missing > 0 {
				return fmt.Errorf("%d of %d results not in the bucket", missing, len(keys))
			}
			return nil
		})
		return map[string]float64{"shortened_partition_values": tg.Metric("otelcol_exporter_s3_shortened_partition_values", "")}
	})
	assert.Equal(t, float64(len(keys)/2), r.Counted["shortened_partition_values"], "every attacker value shortened, no other")

	list, err := minio.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.NotEmpty(t, list.Contents)
	for _, obj := range list.Contents {
		key := aws.ToString(obj.Key)
		assert.LessOrEqual(t, len(key), s3KeyMax, key)
		assert.NotContains(t, key, "/../", "a value cannot add path segments")
	}
	assert.NotContains(t, tg.C.Output(), "Dropping data")
}

// postOTLP sends results as one OTLP/HTTP JSON request, which the collector must accept.
func postOTLP(t *testing.T, tg *Target, results []policyresult.Result) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), results[0].Cluster)
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range results {
		policyresult.WriteLogRecord(&results[i], lrs.AppendEmpty())
	}
	body, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/logs", tg.Ports.HTTP), "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
