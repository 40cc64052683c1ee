// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

func count(t *testing.T, s *Server, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.store.db.QueryRow(query, args...).Scan(&n), query)
	return n
}

func metricsText(t *testing.T, s *Server) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, s.metrics.write(&b))
	return b.String()
}

// TestMetadataStoredOnce: requests with the same extra_metadata share one row of metadata however many results
// they hold, in both tables; the result's page shows it, the failing list does not carry it.
func TestMetadataStoredOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		meta := map[string]string{"environment": "prod", "region": "eu-west-1"}
		var first []*pb.Result
		for i := range 50 {
			first = append(first, spec{cluster: "c1", policy: "p", name: fmt.Sprintf("pod-%d", i),
				outcome: policyresult.OutcomeFail, observed: 1}.pb())
		}
		require.Equal(t, uint32(50), forward(t, s, &pb.ForwardRequest{Results: first, ExtraMetadata: meta}).GetAccepted())
		// The same value again (a new outcome of one result), then another value.
		changed := with(spec{cluster: "c1", policy: "p", name: "pod-0", outcome: policyresult.OutcomePass, observed: 2},
			func(s *spec) { s.state = policyresult.StateChanged })
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{changed.pb()}, ExtraMetadata: map[string]string{"region": "eu-west-1", "environment": "prod"}})
		other := spec{cluster: "c1", policy: "p", name: "other", outcome: policyresult.OutcomeFail, observed: 1}
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{other.pb()}, ExtraMetadata: map[string]string{"environment": "staging"}})

		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata`), "one row per distinct value")
		assert.Equal(t, 1, count(t, s, `SELECT COUNT(DISTINCT metadata_id) FROM result_history WHERE key <> $1`, keyOf(other)))

		d, err := s.Result(context.Background(), keyOf(changed))
		require.NoError(t, err)
		assert.Equal(t, meta, d.ExtraMetadata)
		d, err = s.Result(context.Background(), keyOf(other))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"environment": "staging"}, d.ExtraMetadata)

		// A server that restarts finds the values again instead of adding them.
		s.store.metadataCache = metadataIDs{}
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{with(other, func(s *spec) { s.observed = 5; s.message = "again" }).pb()},
			ExtraMetadata: map[string]string{"environment": "staging"}})
		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata`))
	})
}

// TestMetadataLimits: a request whose extra_metadata has too many keys or bytes has all its results rejected,
// each with the reason, and counted; nothing of it is stored.
func TestMetadataLimits(t *testing.T) {
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/r.db", Ingest: IngestLimits{MaxMetadataKeys: 3, MaxMetadataBytes: 40}})
	many := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	big := map[string]string{"note": strings.Repeat("x", 37)}
	for _, tt := range []struct {
		meta   map[string]string
		reason string
	}{
		{many, "extra_metadata has 4 keys, more than this server's limit of 3"},
		{big, "extra_metadata holds 41 bytes of keys and values, more than this server's limit of 40"},
	} {
		resp := forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{podA.pb(), podB.pb()}, ExtraMetadata: tt.meta})
		assert.Zero(t, resp.GetAccepted())
		require.Len(t, resp.GetRejected(), 2)
		for i, r := range resp.GetRejected() {
			assert.Equal(t, &pb.Rejection{Index: uint32(i), Id: []string{idOf(podA), idOf(podB)}[i], Reason: tt.reason}, r)
		}
	}
	assert.Empty(t, current(t, s))
	assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM metadata`))
	assert.Contains(t, metricsText(t, s), `results_server_results_rejected_total{reason="metadata_too_large"} 4`)
	assert.Equal(t, uint32(1), forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{podA.pb()},
		ExtraMetadata: map[string]string{"a": "1", "b": "2", "note": strings.Repeat("x", 32)}}).GetAccepted(), "at the limits")
}

// TestMigrationToVersion5 fills a database of schema version 4 as the server before wrote it (extra_metadata
// in every row, a result pinned by a time in 2262), then opens it: the values move to metadata, one row each,
// the rows reference them, the clusters are counted, the pinned result is ordered by when it was received, and
// the fleet view and result pages read it all.
func TestMigrationToVersion5(t *testing.T) {
	eachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
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

		s := open(t, dsn)
		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata`))
		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata WHERE hash = $1 OR hash = $2`,
			metadataHash([]byte(metaA)), metadataHash([]byte(metaB))), "hashed as ingest hashes")
		for _, table := range []string{"results", "result_history"} {
			assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM `+table+` WHERE metadata_id NOT IN (SELECT id FROM metadata)`), table)
		}
		assert.Equal(t, 2, count(t, s, `SELECT keys FROM clusters WHERE cluster = 'east'`))
		assert.Equal(t, 1, count(t, s, `SELECT keys FROM clusters WHERE cluster = 'west'`))
		assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM results WHERE order_unix_nano > $1`, received), "no longer pinned")
		assert.Zero(t, count(t, s, `SELECT COUNT(*) FROM result_history WHERE order_unix_nano > $1`, received))

		detail, err := s.Result(ctx, "k3")
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"<html>": "&", "k8s.cluster.name": "west"}, detail.ExtraMetadata)
		v, err := s.Fleet(ctx, Filter{})
		require.NoError(t, err)
		assert.Len(t, v.Failing, 3)

		// New results with a value stored before share its row.
		forward(t, s, &pb.ForwardRequest{Results: []*pb.Result{podA.pb()}, ExtraMetadata: map[string]string{"environment": "prod"}})
		assert.Equal(t, 2, count(t, s, `SELECT COUNT(*) FROM metadata`))
	})
}
