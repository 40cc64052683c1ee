// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const testBucket = "policy-results"

// startMinIO starts MinIO with the test bucket and gives the exporter (through the SDK's environment
// credentials) the root user.
func startMinIO(t testing.TB) *miniotest.Server {
	t.Helper()
	srv := miniotest.Start(t)
	srv.CreateBucket(testBucket)
	setCredentials(t, srv.AccessKey, srv.SecretKey)
	return srv
}

func setCredentials(t testing.TB, accessKey, secretKey string) {
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
}

// testConfig sends to srv synchronously: no queue, no retry, unless a test turns them on.
func testConfig(srv *miniotest.Server) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.S3Uploader.S3Bucket = testBucket
	cfg.S3Uploader.Endpoint = srv.Endpoint()
	cfg.S3Uploader.S3ForcePathStyle = true
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	return cfg
}

// testExporter is a started exporter, shut down when the test ends.
type testExporter struct {
	exporter.Logs
	telemetry *componenttest.Telemetry
}

// startExporter creates cfg's exporter as the factory does; wrap, when set, sees every S3 request it sends.
func startExporter(t testing.TB, cfg *Config, wrap func(s3.HTTPClient) s3.HTTPClient) *testExporter {
	t.Helper()
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tel)
	e, err := newLogsExporter(cfg, set)
	require.NoError(t, err)
	e.wrapClient = wrap
	exp, err := e.helper(context.Background(), set)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return &testExporter{Logs: exp, telemetry: tel}
}

// body is a result as a policy engine reports it, the receivers' record body.
func body(m pcommon.Map, i int) {
	m.PutStr("policy", "restrict-seccomp-strict")
	m.PutStr("rule", "check-seccomp-strict")
	m.PutStr("result", "fail")
	m.PutStr("message", fmt.Sprintf("validation error: Use of custom Seccomp profiles is disallowed. rule %d failed at path /spec/securityContext/seccompProfile/type/", i))
	props := m.PutEmptyMap("properties")
	props.PutStr("controls", "Seccomp")
	props.PutStr("standard", "restricted")
	props.PutStr("version", "latest")
}

// addResults appends n policy.result records of cluster and source at ts to ld, numbered from first.
func addResults(ld plog.Logs, cluster, source string, ts time.Time, first, n int) {
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), cluster)
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := first; i < first+n; i++ {
		lr := lrs.AppendEmpty()
		policyresult.WriteLogRecord(&policyresult.Result{
			Cluster: cluster, Source: source, Policy: "restrict-seccomp-strict", Rule: "check-seccomp-strict",
			Category: "Pod Security Standards (Restricted)", Severity: policyresult.SeverityMedium,
			Outcome: policyresult.OutcomeFail, Message: "Use of custom Seccomp profiles is disallowed",
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("cart-%d", i),
				UID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i)},
			Report:    policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: fmt.Sprintf("report-%d", i)},
			State:     policyresult.StateNew,
			Timestamp: ts,
		}, lr)
		body(lr.Body().SetEmptyMap(), i)
	}
}

// addDecisions appends policy.decision records with the given ids to ld.
func addDecisions(ld plog.Logs, cluster string, ts time.Time, ids ...string) {
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), cluster)
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	allowed := false
	for _, id := range ids {
		lr := lrs.AppendEmpty()
		policyresult.WriteDecisionLogRecord(&policyresult.Decision{
			Cluster: cluster, ID: id, Kind: policyresult.DecisionKindQuery, Source: "opa", Policy: "kubernetes/admission/deny",
			Allowed: &allowed, Messages: []string{"image from untrusted registry"}, Operation: "CREATE", User: "alice",
			Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-" + id},
			Timestamp: ts,
		}, lr)
		lr.Body().SetStr(`{"decision_id":"` + id + `"}`)
	}
}

// object is a stored object, decompressed; a Parquet file as stored.
type object struct {
	key             string
	size            int64
	contentType     string
	contentEncoding string
	etag            string
	lines           []byte
}

// parse decodes every line of o as a JSON object.
func (o object) parse(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.True(t, bytes.HasSuffix(o.lines, []byte("\n")), "%s does not end with a newline", o.key)
	for line := range bytes.SplitSeq(bytes.TrimSuffix(o.lines, []byte("\n")), []byte("\n")) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m), "%s: %s", o.key, line)
		out = append(out, m)
	}
	return out
}

// listObjects gets every object of the test bucket, sorted by key, and decompresses it by its extension.
func listObjects(t testing.TB, client *s3.Client) []object {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []object
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, o := range page.Contents {
			got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: o.Key})
			require.NoError(t, err)
			raw, err := io.ReadAll(got.Body)
			got.Body.Close()
			require.NoError(t, err)
			obj := object{key: *o.Key, size: int64(len(raw)), contentType: aws.ToString(got.ContentType),
				contentEncoding: aws.ToString(got.ContentEncoding), etag: aws.ToString(got.ETag)}
			obj.lines = decompress(t, obj.key, raw)
			out = append(out, obj)
		}
	}
	slices.SortFunc(out, func(a, b object) int { return strings.Compare(a.key, b.key) })
	return out
}

var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	return d
})

func decompress(t testing.TB, key string, raw []byte) []byte {
	t.Helper()
	out, err := decompressObject(key, raw)
	require.NoError(t, err, key)
	return out
}

// decompressObject decompresses an object by its extension.
func decompressObject(key string, raw []byte) ([]byte, error) {
	switch path.Ext(key) {
	case ".gz":
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case ".zst":
		return zstdDecoder().DecodeAll(raw, nil)
	case ".jsonl", ".parquet":
		return raw, nil
	}
	return nil, fmt.Errorf("unexpected object %s", key)
}

// requestCounter counts the requests an exporter sends, by method and S3 operation.
type requestCounter struct {
	next s3.HTTPClient
	mu   sync.Mutex
	n    map[string]int
}

func countRequests(c *requestCounter) func(s3.HTTPClient) s3.HTTPClient {
	return func(next s3.HTTPClient) s3.HTTPClient {
		c.next = next
		c.n = map[string]int{}
		return c
	}
}

func (c *requestCounter) Do(r *http.Request) (*http.Response, error) {
	op := r.Method
	q := r.URL.Query()
	switch {
	case q.Has("uploads"):
		op = "CreateMultipartUpload"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		op = "UploadPart"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		op = "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		op = "AbortMultipartUpload"
	case r.Method == http.MethodPut:
		op = "PutObject"
	}
	c.mu.Lock()
	c.n[op]++
	c.mu.Unlock()
	return c.next.Do(r)
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}
