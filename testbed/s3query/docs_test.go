// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3query

import (
	"cmp"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// documents are those whose DuckDB SQL users copy: a view `current` (the latest record of each result) per
// format, and the two questions over it.
var documents = []string{"../../docs/parquet.md", "../../exporter/s3exporter/README.md"}

// documentedBucket is the bucket URL of the documents' SQL, which the tests replace with the local copy.
const documentedBucket = "s3://compliance-evidence/otelcol-policy"

var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestDocumentedQueriesAnswerAsTheInput runs the documents' SQL on the local copy of what the exporter wrote: each
// view `current` they define, and over each view every documented question, whose answer must be the input's
// (the failing results per policy compared as a set: the documents order them by count); other queries over a
// Parquet view must run.
func TestDocumentedQueriesAnswerAsTheInput(t *testing.T) {
	var views, findingsQueries, failingQueries, otherQueries []string
	for _, doc := range documents {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range sqlBlock.FindAllStringSubmatch(string(text), -1) {
			for stmt := range strings.SplitSeq(m[1], ";") {
				switch {
				case strings.Contains(stmt, "CREATE VIEW current"):
					views = append(views, stmt)
				case !strings.Contains(stmt, "FROM current"):
				case strings.Contains(stmt, "vulnerability_score_base >= 8"):
					findingsQueries = append(findingsQueries, stmt)
				case strings.Contains(stmt, "AS failing"):
					failingQueries = append(failingQueries, stmt)
				default:
					otherQueries = append(otherQueries, stmt)
				}
			}
		}
	}
	require.Len(t, views, 3, "the Parquet view of docs/parquet.md, the Parquet and JSON lines views of the README")
	require.Len(t, findingsQueries, 2)
	require.Len(t, failingQueries, 1)
	require.Len(t, otherQueries, 1, "an attribute without a column")

	srv := startMinIO(t)
	in := input{n: 2000}
	wantFindings, wantFailing := in.want()
	ctx := context.Background()
	dir := t.TempDir()
	for _, f := range formats {
		in.batches(500, exporter(t, srv, f))
		_, _, err := download(ctx, srv.Client(), bucket, f.name+"/", dir)
		require.NoError(t, err)
	}
	for i, view := range views {
		f := formats[1]
		if strings.Contains(view, "read_ndjson") {
			f = formats[0]
		}
		db := openDuckDB(t)
		_, err := db.ExecContext(ctx, strings.ReplaceAll(view, documentedBucket, filepath.Join(dir, f.name)))
		require.NoError(t, err, view)
		for _, q := range findingsQueries {
			got, err := query(ctx, db, q, scanFinding)
			require.NoError(t, err, q)
			require.Equal(t, wantFindings, got, "view %d (%s): %s", i, f.name, q)
		}
		for _, q := range failingQueries {
			got, err := query(ctx, db, q, scanPolicyCount)
			require.NoError(t, err, q)
			slices.SortFunc(got, func(a, b policyCount) int { return cmp.Compare(a.Policy, b.Policy) })
			require.Equal(t, wantFailing, got, "view %d (%s): %s", i, f.name, q)
		}
		if f.format == formats[1].format {
			for _, q := range otherQueries {
				_, err := query(ctx, db, q, func(rows *sql.Rows, s *string) error { return rows.Scan(s) })
				require.NoError(t, err, q)
			}
		}
	}
}
