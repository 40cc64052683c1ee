// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// storedRow is some columns of a Parquet object, read back by name.
type storedRow struct {
	Time       time.Time `parquet:"time,optional,timestamp(microsecond)"`
	EventName  string    `parquet:"event_name,optional"`
	Cluster    string    `parquet:"k8s_cluster_name,optional"`
	Source     string    `parquet:"policy_source,optional"`
	Result     string    `parquet:"policy_result,optional"`
	Resource   string    `parquet:"policy_resource_name,optional"`
	DecisionID string    `parquet:"policy_decision_id,optional"`
	Attributes string    `parquet:"attributes,optional"`
	Body       string    `parquet:"body,optional"`
}

func readParquet(t testing.TB, file []byte) []storedRow {
	t.Helper()
	r := parquet.NewGenericReader[storedRow](bytes.NewReader(file))
	defer r.Close()
	rows := make([]storedRow, r.NumRows())
	n, err := r.Read(rows)
	if n < len(rows) {
		require.NoError(t, err)
	}
	return rows[:n]
}

// Parquet objects go under the same partitions as JSON lines, named by the same hash of the same records'
// lines, so a batch written in either format gets the same names but for the extension; a retried batch writes
// the same bytes under the same keys.
func TestExportWritesPartitionedParquet(t *testing.T) {
	srv := startMinIO(t)
	ld := plog.NewLogs()
	addResults(ld, "prod-eu-1", "kyverno", nine, 0, 3)
	addResults(ld, "prod-eu-1", "kyverno", ten, 3, 2)
	addResults(ld, "prod-us-1", "trivy", nine, 5, 1)
	addDecisions(ld, "prod-eu-1", nine, "d-1", "d-2")
	for _, format := range []string{FormatNDJSON, FormatParquet} {
		cfg := testConfig(srv)
		cfg.Format = format
		cfg.S3Uploader.Compression = CompressionZstd
		cfg.S3Uploader.S3Prefix = format
		cfg.PartitionAttributes = []string{policyresult.AttrClusterName, policyresult.AttrSource}
		exp := startExporter(t, cfg, nil)
		require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	}

	objs := listObjects(t, srv.Client())
	ndjson := map[string]object{}
	for _, o := range objs {
		if rest, ok := strings.CutPrefix(o.key, FormatNDJSON+"/"); ok {
			ndjson[strings.TrimSuffix(rest, ".jsonl.zst")] = o
		}
	}
	require.Len(t, ndjson, 4)
	byDir := map[string][]storedRow{}
	for _, o := range objs {
		rest, ok := strings.CutPrefix(o.key, FormatParquet+"/")
		if !ok {
			continue
		}
		require.True(t, strings.HasSuffix(rest, ".parquet"), o.key)
		lines, same := ndjson[strings.TrimSuffix(rest, ".parquet")]
		require.True(t, same, "%s has the name of the JSON lines object of the same records", o.key)
		assert.Equal(t, "application/vnd.apache.parquet", o.contentType)
		assert.Empty(t, o.contentEncoding, "the compression is inside the file")
		rows := readParquet(t, o.lines)
		assert.Len(t, rows, len(lines.parse(t)), o.key)
		byDir[path.Dir(rest)] = rows
	}
	require.Len(t, byDir, 4)

	results := byDir["k8s_cluster_name=prod-eu-1/policy_source=kyverno/date=2026-03-07/hour=09"]
	require.Len(t, results, 3)
	for i, r := range results {
		assert.Equal(t, nine, r.Time.UTC())
		assert.Equal(t, policyresult.EventResult, r.EventName)
		assert.Equal(t, "prod-eu-1", r.Cluster)
		assert.Equal(t, "kyverno", r.Source)
		assert.Equal(t, "fail", r.Result)
		assert.Equal(t, fmt.Sprintf("cart-%d", i), r.Resource)
		assert.Contains(t, r.Attributes, `"policy.message":"Use of custom Seccomp profiles is disallowed"`)
		assert.Contains(t, r.Body, `"properties":{"controls":"Seccomp","standard":"restricted","version":"latest"}`)
	}
	assert.Equal(t, ten, byDir["k8s_cluster_name=prod-eu-1/policy_source=kyverno/date=2026-03-07/hour=10"][0].Time.UTC())
	decisions := byDir["k8s_cluster_name=prod-eu-1/policy_source=opa/date=2026-03-07/hour=09"]
	require.Len(t, decisions, 2)
	assert.Equal(t, "d-2", decisions[1].DecisionID)
	assert.Equal(t, `"{\"decision_id\":\"d-2\"}"`, decisions[1].Body)
	assert.Equal(t, "trivy", byDir["k8s_cluster_name=prod-us-1/policy_source=trivy/date=2026-03-07/hour=09"][0].Source)

	// The same batch again: the same keys, the same bytes.
	cfg := testConfig(srv)
	cfg.Format = FormatParquet
	cfg.S3Uploader.Compression = CompressionZstd
	cfg.S3Uploader.S3Prefix = FormatParquet
	cfg.PartitionAttributes = []string{policyresult.AttrClusterName, policyresult.AttrSource}
	require.NoError(t, startExporter(t, cfg, nil).ConsumeLogs(context.Background(), ld))
	again := listObjects(t, srv.Client())
	require.Len(t, again, len(objs))
	for i := range objs {
		assert.Equal(t, objs[i].key, again[i].key)
		assert.Equal(t, objs[i].etag, again[i].etag, objs[i].key)
	}
}
