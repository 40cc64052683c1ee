// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3query

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
	"github.com/stretchr/testify/require"
)

// format is one way the s3 exporter writes objects, and how DuckDB reads them as the view `records`, with the
// same columns for both: the Parquet columns' names (docs/parquet.md), which the JSON lines spell with dots.
// DuckDB reads the Hive partitions of the paths by default, as a user's query would: a Parquet column that is
// also a partition (k8s_cluster_name here) then has the partition's value, percent-decoded.
type format struct {
	name        string // the exporter's sub-prefix for it in the bucket
	format      string // the exporter's `format`
	compression string // the exporter's `s3uploader::compression`
	// view reads the objects under dir as `records`.
	view func(dir string) string
}

var formats = []format{
	{name: "ndjson-gzip", format: "ndjson", compression: "gzip", view: ndjsonView},
	{name: "parquet-zstd", format: "parquet", compression: "zstd", view: parquetView},
}

// recordColumns are the columns the queries read, as Parquet names them, with their types: read_json reads only
// these keys of each line.
var recordColumns = []struct{ name, typ string }{
	{"time", "TIMESTAMPTZ"}, {"observed_time", "TIMESTAMPTZ"}, {"event_name", "VARCHAR"},
	{"k8s_cluster_name", "VARCHAR"}, {"policy_name", "VARCHAR"}, {"policy_result", "VARCHAR"},
	{"policy_result_state", "VARCHAR"}, {"policy_resource_namespace", "VARCHAR"}, {"policy_resource_name", "VARCHAR"},
	{"vulnerability_id", "VARCHAR"}, {"vulnerability_score_base", "DOUBLE"}, {"package_name", "VARCHAR"},
	{"package_fixed_version", "VARCHAR"}, {"policy_result_key", "VARCHAR"},
}

// jsonKeys are the line's keys of the columns that are attributes (the others are the record's fields, named
// alike in both formats).
var jsonKeys = map[string]string{
	"k8s_cluster_name": "k8s.cluster.name", "policy_name": "policy.name", "policy_result": "policy.result",
	"policy_result_state": "policy.result.state", "policy_resource_namespace": "policy.resource.namespace",
	"policy_resource_name": "policy.resource.name", "vulnerability_id": "vulnerability.id",
	"vulnerability_score_base": "vulnerability.score.base", "package_name": "package.name",
	"package_fixed_version": "package.fixed_version", "policy_result_key": "policy.result.key",
}

// ndjsonView reads the keys of the JSON lines that the queries need, with their types, as the exporter README's
// view does (else DuckDB infers a schema from a sample of lines whose keys vary by source), and names them as
// the Parquet columns.
func ndjsonView(dir string) string {
	keys := make([]string, 0, len(recordColumns))
	cols := make([]string, 0, len(recordColumns))
	for _, c := range recordColumns {
		key := c.name
		if k, ok := jsonKeys[c.name]; ok {
			key = k
		}
		keys = append(keys, fmt.Sprintf("'%s': '%s'", key, c.typ))
		cols = append(cols, fmt.Sprintf("%q AS %s", key, c.name))
	}
	return fmt.Sprintf(`CREATE OR REPLACE VIEW records AS SELECT %s
FROM read_ndjson('%s/**/*.jsonl.gz', columns = {%s})`,
		strings.Join(cols, ", "), dir, strings.Join(keys, ", "))
}

func parquetView(dir string) string {
	cols := make([]string, 0, len(recordColumns))
	for _, c := range recordColumns {
		cols = append(cols, c.name)
	}
	return fmt.Sprintf(`CREATE OR REPLACE VIEW records AS SELECT %s
FROM read_parquet('%s/**/*.parquet')`, strings.Join(cols, ", "), dir)
}

// current keeps the latest record of each result: what the fleet's state is now.
const current = `WITH current AS (
  SELECT * FROM records WHERE event_name = 'policy.result'
  QUALIFY row_number() OVER (PARTITION BY policy_result_key ORDER BY time DESC, observed_time DESC) = 1)
`

// findingsQuery is "every CVSS ≥ 8 finding with a fix, per cluster".
const findingsQuery = current + `SELECT k8s_cluster_name, policy_resource_namespace, policy_resource_name, vulnerability_id,
       package_name, vulnerability_score_base, package_fixed_version
FROM current
WHERE policy_result = 'fail' AND policy_result_state IS DISTINCT FROM 'resolved'
  AND vulnerability_score_base >= 8 AND package_fixed_version <> ''
ORDER BY k8s_cluster_name, policy_resource_namespace, policy_resource_name, vulnerability_id`

// failingQuery is "failing results per policy".
const failingQuery = current + `SELECT policy_name, count(*) AS failing
FROM current
WHERE policy_result = 'fail' AND policy_result_state IS DISTINCT FROM 'resolved'
GROUP BY policy_name ORDER BY policy_name`

// openDuckDB opens an in-memory DuckDB that loads nothing from the network: its json and parquet readers are
// built in, and this machine cannot download extensions.
func openDuckDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	// One connection: the view lives in the connection's catalog of an in-memory database, shared anyway,
	// and settings are per connection.
	db.SetMaxOpenConns(1)
	for _, s := range []string{
		"SET autoinstall_known_extensions = false",
		"SET extension_directory = '" + t.TempDir() + "'",
	} {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	return db
}

// findings runs findingsQuery.
func findings(ctx context.Context, db *sql.DB) ([]finding, error) {
	return query(ctx, db, findingsQuery, scanFinding)
}

func scanFinding(rows *sql.Rows, f *finding) error {
	return rows.Scan(&f.Cluster, &f.Namespace, &f.Pod, &f.CVE, &f.Package, &f.Score, &f.FixedVersion)
}

// failingPerPolicy runs failingQuery.
func failingPerPolicy(ctx context.Context, db *sql.DB) ([]policyCount, error) {
	return query(ctx, db, failingQuery, scanPolicyCount)
}

func scanPolicyCount(rows *sql.Rows, c *policyCount) error { return rows.Scan(&c.Policy, &c.Failing) }

// query returns the rows of q, each read by scan.
func query[T any](ctx context.Context, db *sql.DB, q string, scan func(*sql.Rows, *T) error) ([]T, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// requireAnswers runs both queries on db and requires the answers the input gives.
func requireAnswers(t testing.TB, db *sql.DB, wantFindings []finding, wantFailing []policyCount) {
	t.Helper()
	ctx := context.Background()
	gotFindings, err := findings(ctx, db)
	require.NoError(t, err)
	require.Equal(t, wantFindings, gotFindings)
	gotFailing, err := failingPerPolicy(ctx, db)
	require.NoError(t, err)
	require.Equal(t, wantFailing, gotFailing)
}

// download copies the objects under prefix of bucket into dir, keeping their keys as paths (and so the Hive
// partitions), and returns how many objects and bytes it copied. DuckDB would read them from S3 itself through
// its httpfs extension, which it downloads on first use: not possible on this machine.
func download(ctx context.Context, client *s3.Client, bucket, prefix, dir string) (objects int, bytes int64, err error) {
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return objects, bytes, fmt.Errorf("listing %s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			n, err := copyObject(ctx, client, bucket, aws.ToString(o.Key), dir)
			if err != nil {
				return objects, bytes, err
			}
			objects++
			bytes += n
		}
	}
	return objects, bytes, nil
}

func copyObject(ctx context.Context, client *s3.Client, bucket, key, dir string) (int64, error) {
	if !filepath.IsLocal(filepath.FromSlash(key)) {
		return 0, fmt.Errorf("object key %q is not a relative path inside the copy", key)
	}
	got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return 0, fmt.Errorf("getting %s: %w", key, err)
	}
	defer got.Body.Close()
	path := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, got.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
