// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// migration is the statements of one schema version. Most are the same on both databases; the few that differ
// take them from the dialect (see the dialect's methods below).
type migration func(d dialect) []string

// statements is a migration whose SQL is the same on both databases.
func statements(stmts ...string) migration { return func(dialect) []string { return stmts } }

// migrations are the schema versions, in order: migration i+1 brings the schema from version i to i+1. A
// released migration is never edited; a change is a new one. The SQL is the subset SQLite and PostgreSQL share
// (TEXT, BIGINT, INTEGER; booleans as 0/1 and times as Unix nanoseconds, which both compare exactly).
var migrations = []migration{
	statements(
		// The current state: the latest outcome per result key.
		`CREATE TABLE results (
			key TEXT PRIMARY KEY,
			id TEXT NOT NULL,
			cluster TEXT NOT NULL,
			source TEXT NOT NULL,
			policy TEXT NOT NULL,
			rule TEXT NOT NULL,
			category TEXT NOT NULL,
			severity TEXT NOT NULL,
			outcome TEXT NOT NULL,
			scored INTEGER,
			message TEXT NOT NULL,
			resource_api_version TEXT NOT NULL,
			resource_kind TEXT NOT NULL,
			resource_namespace TEXT NOT NULL,
			resource_name TEXT NOT NULL,
			resource_uid TEXT NOT NULL,
			report_kind TEXT NOT NULL,
			report_namespace TEXT NOT NULL,
			report_name TEXT NOT NULL,
			state TEXT NOT NULL,
			timestamp_unix_nano BIGINT,
			observed_unix_nano BIGINT,
			order_unix_nano BIGINT NOT NULL,
			extra_metadata TEXT NOT NULL,
			body_json TEXT NOT NULL,
			resolved INTEGER NOT NULL,
			first_seen_unix_nano BIGINT NOT NULL,
			updated_unix_nano BIGINT NOT NULL
		)`,
		`CREATE INDEX results_by_policy ON results (cluster, source, policy)`,
		`CREATE INDEX results_by_outcome ON results (outcome, resolved)`,
		// Every outcome ever forwarded, once per id and state: what a result went through.
		`CREATE TABLE result_history (
			id TEXT NOT NULL,
			state TEXT NOT NULL,
			key TEXT NOT NULL,
			cluster TEXT NOT NULL,
			source TEXT NOT NULL,
			policy TEXT NOT NULL,
			rule TEXT NOT NULL,
			category TEXT NOT NULL,
			severity TEXT NOT NULL,
			outcome TEXT NOT NULL,
			scored INTEGER,
			message TEXT NOT NULL,
			resource_api_version TEXT NOT NULL,
			resource_kind TEXT NOT NULL,
			resource_namespace TEXT NOT NULL,
			resource_name TEXT NOT NULL,
			resource_uid TEXT NOT NULL,
			report_kind TEXT NOT NULL,
			report_namespace TEXT NOT NULL,
			report_name TEXT NOT NULL,
			timestamp_unix_nano BIGINT,
			observed_unix_nano BIGINT,
			order_unix_nano BIGINT NOT NULL,
			extra_metadata TEXT NOT NULL,
			body_json TEXT NOT NULL,
			received_unix_nano BIGINT NOT NULL,
			PRIMARY KEY (id, state)
		)`,
		`CREATE INDEX result_history_by_key ON result_history (key)`,
	),
	statements(
		// What the retention selects by (see retention.go). IF NOT EXISTS: an operator who made them by hand
		// before upgrading, to prune a large database themselves, still migrates.
		`CREATE INDEX IF NOT EXISTS result_history_by_received ON result_history (received_unix_nano)`,
		`CREATE INDEX IF NOT EXISTS results_resolved_by_updated ON results (updated_unix_nano) WHERE resolved = 1`,
	),
	statements(findingColumns()...),
	statements(fleetViewIndexes()...),
	ingestBounds,
}

// findingColumns is schema version 3: the finding fields of the model (a vulnerable package, a control's failed
// checks) as columns of both tables, so that the fleet view filters on them in SQL (score >= 8, fixable).
func findingColumns() []string {
	cols := []string{
		"vulnerability_id TEXT NOT NULL DEFAULT ''",
		"vulnerability_score DOUBLE PRECISION",
		"vulnerability_score_version TEXT NOT NULL DEFAULT ''",
		"vulnerability_reference TEXT NOT NULL DEFAULT ''",
		"package_name TEXT NOT NULL DEFAULT ''",
		"package_version TEXT NOT NULL DEFAULT ''",
		"package_fixed_version TEXT NOT NULL DEFAULT ''",
		"package_path TEXT NOT NULL DEFAULT ''",
		"package_type TEXT NOT NULL DEFAULT ''",
		"failed_checks BIGINT",
	}
	var stmts []string
	for _, table := range []string{"results", "result_history"} {
		for _, c := range cols {
			stmts = append(stmts, "ALTER TABLE "+table+" ADD COLUMN "+c)
		}
	}
	return append(stmts, `CREATE INDEX results_by_vulnerability ON results (vulnerability_id) WHERE vulnerability_id <> ''`)
}

// fleetViewIndexes is schema version 4: indexes that keep the fleet view's pages fast at millions of results.
// They are partial, holding only the rows the pages read (current results; failing ones), and SQLite uses a
// partial index only for a query whose WHERE clause holds the index's terms as written: the queries take
// failingCond and "resolved = 0" from here.
func fleetViewIndexes() []string {
	stmts := []string{
		// Replaced by results_current, which holds their columns and more: the grouping queries of the
		// overview, policies and namespaces pages read it alone, not the rows with their bodies.
		`DROP INDEX results_by_policy`,
		`DROP INDEX results_by_outcome`,
		`CREATE INDEX results_current ON results (cluster, source, policy, outcome, severity, resource_namespace)
			WHERE resolved = 0`,
		// A result's outcomes in order, as its page lists them and the trend walks them (a window over each key's
		// rows): read in index order instead of sorted.
		`DROP INDEX result_history_by_key`,
		`CREATE INDEX result_history_by_key ON result_history (key, order_unix_nano, received_unix_nano)`,
	}
	// The failing list, newest change first, paged by (updated_unix_nano, key): one walk of an index per page
	// however deep, from the newest failing result of the cluster, namespace or policy asked for.
	for _, ix := range []struct{ name, lead string }{
		{"recent", ""}, {"by_cluster", "cluster, "}, {"by_namespace", "resource_namespace, "}, {"by_policy", "policy, "},
	} {
		stmts = append(stmts, `CREATE INDEX results_failing_`+ix.name+` ON results (`+ix.lead+`updated_unix_nano, key)
			WHERE resolved = 0 AND `+failingCond)
	}
	return stmts
}

// ingestBounds is schema version 5: what one client can make the database hold is proportional to what it
// sent, and bounded per token (issue 29).
//
//   - extra_metadata, which each request applies to all of its results, was a JSON copy in every row of both
//     tables: one request of 1 MiB of metadata and 1,000 results wrote 2 GiB. It is now stored once per
//     distinct value in metadata, keyed by the SHA-256 of its JSON, and rows reference it by id. Existing
//     values were written by json.Marshal of the map, which is the canonical form new ones are hashed in, so
//     the database hashes them itself (metadataHash) and equal values share their row.
//   - clusters counts each cluster's rows of results (ingest adds the keys it inserts, the retention subtracts
//     what it deletes): a token's key quota is the sum over the clusters it wrote, token_clusters, which are
//     themselves its cluster quota. A token is recorded by its fingerprint (tokenFingerprint), never itself.
//   - Rows ordered more than DefaultMaxClockSkew after this server received them were ordered by a clock ahead
//     (or a forged time: a pass observed in 2262 kept a result from ever changing again): they are ordered by
//     when they were received, as ingest now orders such times.
func ingestBounds(d dialect) []string {
	stmts := []string{
		`CREATE TABLE metadata (
			id ` + d.identity() + `,
			hash TEXT NOT NULL UNIQUE,
			json TEXT NOT NULL
		)`,
		`INSERT INTO metadata (hash, json) SELECT ` + d.metadataHash("m") + `, m FROM (
			SELECT extra_metadata AS m FROM results UNION SELECT extra_metadata FROM result_history) AS u`,
	}
	for _, table := range []string{"results", "result_history"} {
		stmts = append(stmts,
			`ALTER TABLE `+table+` ADD COLUMN metadata_id BIGINT NOT NULL DEFAULT 0`,
			`UPDATE `+table+` SET metadata_id = (SELECT id FROM metadata WHERE hash = `+d.metadataHash(table+".extra_metadata")+`)`,
			`ALTER TABLE `+table+` DROP COLUMN extra_metadata`)
	}
	skew := strconv.FormatInt(int64(version5ClockSkew), 10)
	return append(stmts,
		`CREATE TABLE clusters (
			cluster TEXT PRIMARY KEY,
			keys BIGINT NOT NULL
		)`,
		`INSERT INTO clusters (cluster, keys) SELECT cluster, COUNT(*) FROM results GROUP BY cluster`,
		`CREATE TABLE token_clusters (
			token TEXT NOT NULL,
			cluster TEXT NOT NULL,
			first_unix_nano BIGINT NOT NULL,
			PRIMARY KEY (token, cluster)
		)`,
		`UPDATE results SET order_unix_nano = updated_unix_nano WHERE order_unix_nano > updated_unix_nano + `+skew,
		`UPDATE result_history SET order_unix_nano = received_unix_nano WHERE order_unix_nano > received_unix_nano + `+skew,
	)
}

// identity is the type of a table's integer key that the database numbers itself.
func (d dialect) identity() string {
	if d.name == postgresDialect.name {
		return "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
	}
	return "INTEGER PRIMARY KEY" // SQLite's rowid
}

// metadataHash is the SQL of metadataHash of a text column: its SHA-256 in lower-case hex.
func (d dialect) metadataHash(col string) string {
	if d.name == postgresDialect.name {
		return "encode(sha256(convert_to(" + col + ", 'UTF8')), 'hex')"
	}
	return sqliteSHA256 + "(" + col + ")"
}

// version5ClockSkew is the results API's default max clock skew when schema version 5 was released: its
// migration orders stored outcomes beyond it as received, as ingest does since. A released migration never
// changes, so it does not follow the server's default.
const version5ClockSkew = 5 * time.Minute

// SchemaVersion is the schema version this server writes.
var SchemaVersion = len(migrations)

// migrate brings the schema to SchemaVersion in one transaction, and refuses a database a newer server has
// migrated further, whose meaning this one does not know.
func migrate(ctx context.Context, db *sql.DB, d dialect) error {
	return migrateTo(ctx, db, d, len(migrations))
}

// migrateTo brings the schema to version target (tests start from older versions).
func migrateTo(ctx context.Context, db *sql.DB, d dialect, target int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if d.migrationLock != "" {
		if _, err := tx.ExecContext(ctx, d.migrationLock); err != nil {
			return fmt.Errorf("locking the schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		applied_unix_nano BIGINT NOT NULL
	)`); err != nil {
		return err
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("the database schema is at version %d, newer than this server's %d", current, len(migrations))
	}
	for v := current + 1; v <= target; v++ {
		for _, stmt := range migrations[v-1](d) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema version %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_unix_nano) VALUES ($1, $2)`,
			v, time.Now().UnixNano()); err != nil {
			return err
		}
	}
	return tx.Commit()
}
