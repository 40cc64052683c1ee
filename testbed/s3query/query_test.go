// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package s3query reads what the s3 exporter wrote to a real MinIO with a real query engine, DuckDB as a
// library (github.com/duckdb/duckdb-go), in both formats, JSON lines with gzip and Parquet with zstd, and checks
// that the questions users ask of such a bucket get the answers the input says: every CVSS ≥ 8 finding with a
// fix, per cluster, and the failing results per policy. BenchmarkS3Query measures the bytes stored per result
// and the time of each query at 1,000,000 results.
//
// DuckDB reads s3:// through its httpfs extension, which it downloads on first use; this machine reaches no
// download site, so the tests copy the objects out of MinIO with the S3 client, keys as paths, and DuckDB reads
// the copy. The package lives in testbed so that DuckDB (cgo, a static library) stays out of the collector's
// components.
package s3query

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestQueriesAnswerAsTheInput writes 2,500 records (2,000 results, 500 of which changed or were resolved later,
// and denied admission decisions that the queries must leave out) in both formats, and runs both queries
// over each: the same answers, equal to the input's.
func TestQueriesAnswerAsTheInput(t *testing.T) {
	srv := startMinIO(t)
	in := input{n: 2000}
	wantFindings, wantFailing := in.want()
	// The input exercises what the queries filter: fixable and unfixable, high and low scores, resolved and
	// flipped results in each cluster.
	require.Greater(t, len(wantFindings), 50)
	clustersSeen := map[string]bool{}
	for _, f := range wantFindings {
		clustersSeen[f.Cluster] = true
	}
	require.Len(t, clustersSeen, len(clusters))

	ctx := context.Background()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			consume := exporter(t, srv, f)
			in.batches(500, consume)
			consume(deniedDecisions())

			dir := t.TempDir()
			objects, _, err := download(ctx, srv.Client(), bucket, f.name+"/", dir)
			require.NoError(t, err)
			require.GreaterOrEqual(t, objects, 2*len(clusters), "a partition per cluster and hour")
			db := openDuckDB(t)
			_, err = db.ExecContext(ctx, f.view(filepath.Join(dir, f.name)))
			require.NoError(t, err)

			var records int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM records").Scan(&records))
			assert.Equal(t, in.records()+len(decisionPolicies), records, "every record stored once")
			requireAnswers(t, db, wantFindings, wantFailing)
		})
	}
}

// decisionPolicies are policies of the input that also deny admissions: their decisions (policy.result "fail")
// are not results, and a query that forgot the event name would count them.
var decisionPolicies = []string{"disallow-seccomp", "disallow-capabilities", "CVE-2026-0101"}

func deniedDecisions() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), clusters[0])
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	allowed := false
	for i, p := range decisionPolicies {
		lr := lrs.AppendEmpty()
		policyresult.WriteDecisionLogRecord(&policyresult.Decision{
			Cluster: clusters[0], ID: fmt.Sprintf("d-%d", i), Kind: policyresult.DecisionKindAdmission,
			Source: "gatekeeper", Policy: p, Allowed: &allowed, Messages: []string{"denied"}, Operation: "CREATE",
			Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "team-00", Name: "checkout"},
			Timestamp: base.Add(3 * time.Hour),
		}, lr)
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(base.Add(3 * time.Hour)))
	}
	return ld
}
