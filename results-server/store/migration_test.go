// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
)

// TestMigrationToVersion5 fills a database of schema version 4 as the server before wrote it (extra_metadata
// in every row, a result pinned by a time in 2262), then opens it: the values move to metadata, one row each,
// the rows reference them, the clusters are counted, the pinned result is ordered by when it was received, and
// the fleet view and result pages read it all.
func TestMigrationToVersion5(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		dsn := newDSN(t)
		ctx := context.Background()
		db, d, err := openDB(ctx, dsn, "")
		require.NoError(t, err)
		require.NoError(t, migrateTo(ctx, db, d, 4))
		const cols = `key, id, cluster, source, policy, rule, category, severity, outcome, message, resource_api_version,
			resource_kind, resource_namespace, resource_name, resource_uid, report_kind, report_namespace, report_name,
			state, order_unix_nano, extra_metadata, body_json`
		const marks = `$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22`
		metaA, metaB := `{"environment":"prod"}`, `{"<html>":"\u0026","k8s.cluster.name":"west"}`
		received := t0.UnixNano()
		pinned := time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		insert := func(key, cluster, meta string, order int64) {
			vals := []any{key, "id-" + key, cluster, "kyverno", "p", "r", "", "high", "fail", "m", "v1", "Pod", "ns", key, "",
				"", "", "", "new", order, meta, `{"a":1}`, received}
			_, err := db.Exec(`INSERT INTO results (`+cols+`, resolved, first_seen_unix_nano, updated_unix_nano) VALUES (`+
				marks+`, 0, $23, $23)`, vals...)
			require.NoError(t, err)
			_, err = db.Exec(`INSERT INTO result_history (`+cols+`, received_unix_nano) VALUES (`+marks+`, $23)`, vals...)
			require.NoError(t, err)
		}
		insert("k1", "east", metaA, received)
		insert("k2", "east", metaA, received)
		insert("k3", "west", metaB, pinned)
		require.NoError(t, db.Close())

		st := openStore(t, dsn)
		assert.Equal(t, 2, count(t, st, `SELECT COUNT(*) FROM metadata`))
		assert.Equal(t, 2, count(t, st, `SELECT COUNT(*) FROM metadata WHERE hash = $1 OR hash = $2`,
			metadataHash([]byte(metaA)), metadataHash([]byte(metaB))), "hashed as ingest hashes")
		for _, table := range []string{"results", "result_history"} {
			assert.Zero(t, count(t, st, `SELECT COUNT(*) FROM `+table+` WHERE metadata_id NOT IN (SELECT id FROM metadata)`), table)
		}
		assert.Equal(t, 2, count(t, st, `SELECT keys FROM clusters WHERE cluster = 'east'`))
		assert.Equal(t, 1, count(t, st, `SELECT keys FROM clusters WHERE cluster = 'west'`))
		assert.Zero(t, count(t, st, `SELECT COUNT(*) FROM results WHERE order_unix_nano > $1`, received), "no longer pinned")
		assert.Zero(t, count(t, st, `SELECT COUNT(*) FROM result_history WHERE order_unix_nano > $1`, received))

		detail, err := st.Result(ctx, "k3")
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"<html>": "&", "k8s.cluster.name": "west"}, detail.ExtraMetadata)
		failing, _, err := st.Failing(ctx, Filter{})
		require.NoError(t, err)
		assert.Len(t, failing, 3)

		// New results with a value stored before share its row.
		r := testRow(t, "east", "p", "pod-a", policyresult.OutcomeFail)
		r.Meta, err = NewMetadata(map[string]string{"environment": "prod"})
		require.NoError(t, err)
		require.NoError(t, st.Put(ctx, []Row{r}, t0))
		assert.Equal(t, 2, count(t, st, `SELECT COUNT(*) FROM metadata`))
	})
}
