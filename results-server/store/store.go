// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Row is a checked result as the tables hold it: what the results API's Forward stores of one result.
type Row struct {
	Key, ID, Cluster, Source, Policy, Rule, Category, Severity, Outcome string
	Scored                                                              *bool
	Message                                                             string
	Resource                                                            policyresult.Resource
	Report                                                              policyresult.Report
	State                                                               string
	Timestamp, Observed                                                 *int64
	// Order is the time that orders the outcomes of one key (see the upsert): a newer row never gives way to
	// an older one.
	Order    int64
	BodyJSON string
	// Meta is the request's extra_metadata, shared by its rows.
	Meta          *Metadata
	Vulnerability policyresult.Vulnerability
	FailedChecks  *int64
	// metadataID is Meta's id in the metadata table, which the transaction that writes the row sets
	// (resolveMetadata).
	metadataID int64
	// at is when this server received the row's request: its received, first-seen and updated time.
	at int64
}

// rowColumns are the columns both tables have, in the order of Row.args.
var rowColumns = []string{
	"key", "id", "cluster", "source", "policy", "rule", "category", "severity", "outcome", "scored", "message",
	"resource_api_version", "resource_kind", "resource_namespace", "resource_name", "resource_uid",
	"report_kind", "report_namespace", "report_name", "state",
	"timestamp_unix_nano", "observed_unix_nano", "order_unix_nano", "metadata_id", "body_json",
	"vulnerability_id", "vulnerability_score", "vulnerability_score_version", "vulnerability_reference",
	"package_name", "package_version", "package_fixed_version", "package_path", "package_type", "failed_checks",
}

func (r *Row) args() []any {
	v := &r.Vulnerability
	var scored any
	if r.Scored != nil {
		scored = boolInt(*r.Scored)
	}
	return []any{
		r.Key, r.ID, r.Cluster, r.Source, r.Policy, r.Rule, r.Category, r.Severity, r.Outcome, scored, r.Message,
		r.Resource.APIVersion, r.Resource.Kind, r.Resource.Namespace, r.Resource.Name, r.Resource.UID,
		r.Report.Kind, r.Report.Namespace, r.Report.Name, r.State,
		nullable(r.Timestamp), nullable(r.Observed), r.Order, r.metadataID, r.BodyJSON,
		v.ID, nullable(v.Score), v.ScoreVersion, v.Reference,
		v.PackageName, v.PackageVersion, v.PackageFixedVersion, v.PackagePath, v.PackageType, nullable(r.FailedChecks),
	}
}

// LongestField is the longest of the row's text fields but the message and the body, by its name in the API.
// Truncating one is no option: the identity fields are hashed into the key the client computed.
func (r *Row) LongestField() (name string, n int) {
	v := &r.Vulnerability
	for _, f := range [...]struct {
		name, value string
	}{
		{"cluster", r.Cluster}, {"source", r.Source}, {"policy", r.Policy}, {"rule", r.Rule}, {"category", r.Category},
		{"resource.api_version", r.Resource.APIVersion}, {"resource.kind", r.Resource.Kind},
		{"resource.namespace", r.Resource.Namespace}, {"resource.name", r.Resource.Name}, {"resource.uid", r.Resource.UID},
		{"report.kind", r.Report.Kind}, {"report.namespace", r.Report.Namespace}, {"report.name", r.Report.Name},
		{"vulnerability.id", v.ID}, {"vulnerability.score_version", v.ScoreVersion},
		{"vulnerability.reference", v.Reference}, {"vulnerability.package_name", v.PackageName},
		{"vulnerability.package_version", v.PackageVersion}, {"vulnerability.package_fixed_version", v.PackageFixedVersion},
		{"vulnerability.package_path", v.PackagePath}, {"vulnerability.package_type", v.PackageType},
	} {
		if len(f.value) > n {
			name, n = f.name, len(f.value)
		}
	}
	return name, n
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nullable[T int64 | float64](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// upsertColumns are the current-state table's columns, in the order of upsertArgs.
var upsertColumns = append(slices.Clone(rowColumns), "resolved", "first_seen_unix_nano", "updated_unix_nano")

// upsertSuffix replaces the current row of a key only with an outcome at least as recent (by order_unix_nano, which
// Row.Order is), so that a retried older request never undoes a newer one; and only with a different
// id or state, so that forwarding the same result again leaves the row, its times included, exactly as it was.
// A resolved state marks the row resolved; any later other state clears the mark.
var upsertSuffix = func() string {
	var set []string
	for _, c := range upsertColumns {
		if c != "key" && c != "first_seen_unix_nano" {
			set = append(set, c+" = excluded."+c)
		}
	}
	return " ON CONFLICT (key) DO UPDATE SET " + strings.Join(set, ", ") +
		" WHERE excluded.order_unix_nano >= results.order_unix_nano" +
		" AND (excluded.id <> results.id OR excluded.state <> results.state)"
}()

// historyColumns are the history table's columns; each (id, state) is recorded once: the first delivery wins
// and repeats are no-ops.
var historyColumns = append(slices.Clone(rowColumns), "received_unix_nano")

const historySuffix = " ON CONFLICT (id, state) DO NOTHING"

// insertSQL is a one-row INSERT into table. Its placeholders are ?, which the SQLite driver binds by
// position: it binds $n by comparing each parameter's name with every argument's number, which cost a sixth of
// the ingest time.
func insertSQL(table string, cols []string, suffix string) string {
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" +
		strings.Repeat("?, ", len(cols)-1) + "?)" + suffix
}

// Store is the results database: the schema, the writes of forwarded results and the fleet's queries, on
// SQLite or PostgreSQL. It is safe for concurrent use.
type Store struct {
	db *sql.DB
	// read answers the fleet view (see openPools).
	read *sql.DB
	d    dialect
	// commits is SQLite's one writer (nil on PostgreSQL).
	commits       *groupCommit
	metadataCache metadataIDs
}

// Open opens the database a DSN names ("sqlite:///abs/path.db", "sqlite://./relative.db",
// "postgres://user:pass@host:port/db?…"), creating the schema or migrating it to SchemaVersion.
func Open(ctx context.Context, dsn string, p Pools) (*Store, error) {
	db, read, d, err := openPools(ctx, dsn, p)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, d); err != nil {
		db.Close()
		read.Close()
		return nil, fmt.Errorf("migrating the schema: %w", err)
	}
	st := &Store{db: db, read: read, d: d}
	if !d.copyRows {
		st.commits = startGroupCommit(st)
	}
	return st, nil
}

// DB is the pool that writes, for what reads or changes the tables directly: tests, and maintenance tools.
func (s *Store) DB() *sql.DB { return s.db }

// Close stops the writer and closes the database.
func (s *Store) Close() error {
	if s.commits != nil {
		s.commits.stop()
	}
	return errors.Join(s.db.Close(), s.read.Close())
}

// Put stores a request's rows in one transaction (on SQLite, one shared with the requests that arrived while
// the previous one was written: see groupCommit), received now.
func (s *Store) Put(ctx context.Context, rows []Row, now time.Time) error {
	at := now.UnixNano()
	for i := range rows {
		rows[i].at = at
	}
	if s.d.copyRows {
		return s.putCopy(ctx, rows)
	}
	return s.commits.put(ctx, rows)
}

// sortByKey puts rows in key order, stable so that the outcomes of one key keep their arrival order: concurrent
// PostgreSQL transactions then lock shared keys in the same order and cannot deadlock each other, and
// latestPerKey finds each key's rows together.
func sortByKey(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int { return strings.Compare(a.Key, b.Key) })
}

// writeRows is the SQLite write: one prepared single-row INSERT per row and table. The embedded SQLite has no
// round trips to save, and binds a long statement's parameters more slowly than several short ones'.
func (s *Store) writeRows(ctx context.Context, rows []Row) error {
	sortByKey(rows)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	ids, err := s.resolveMetadata(ctx, sqlTx{tx}, rows)
	if err != nil {
		return err
	}
	// SQLite gives a new row a rowid larger than the largest in the table before (until rowids reach 2^63), and
	// this writer is the only one: the rows past the largest rowid of before are those this transaction
	// inserted, which the clusters table counts.
	var maxRowid int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM results`).Scan(&maxRowid); err != nil {
		return err
	}
	upsert, err := tx.PrepareContext(ctx, insertSQL("results", upsertColumns, upsertSuffix))
	if err != nil {
		return err
	}
	defer upsert.Close()
	for _, r := range latestPerKey(rows) {
		resolved := boolInt(r.State == string(policyresult.StateResolved))
		if _, err := upsert.ExecContext(ctx, append(r.args(), resolved, r.at, r.at)...); err != nil {
			return fmt.Errorf("storing result %s: %w", r.Key, err)
		}
	}
	inserted, err := s.insertedSince(ctx, tx, maxRowid)
	if err != nil {
		return err
	}
	history, err := tx.PrepareContext(ctx, insertSQL("result_history", historyColumns, historySuffix))
	if err != nil {
		return err
	}
	defer history.Close()
	for _, r := range rows {
		if _, err := history.ExecContext(ctx, append(r.args(), r.at)...); err != nil {
			return fmt.Errorf("recording result %s: %w", r.ID, err)
		}
	}
	if err := addClusterKeys(ctx, sqlTx{tx}, inserted); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.metadataCache.remember(ids)
	return nil
}

// insertedSince counts the rows of results past rowid by cluster: a range of the table's own b-tree.
func (s *Store) insertedSince(ctx context.Context, tx *sql.Tx, rowid int64) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT cluster, COUNT(*) FROM results WHERE rowid > $1 GROUP BY cluster`, rowid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	inserted := map[string]int64{}
	for rows.Next() {
		var cluster string
		var n int64
		if err := rows.Scan(&cluster, &n); err != nil {
			return nil, err
		}
		inserted[cluster] = n
	}
	return inserted, rows.Err()
}

// sqlTx and pgxTx are the transactions of the two drivers as a txRunner.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, q, args...)
	return err
}

func (t sqlTx) queryInt(ctx context.Context, q string, args ...any) (int64, bool, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, q, args...).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return n, err == nil, err
}

type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.Exec(ctx, q, args...)
	return err
}

func (t pgxTx) queryInt(ctx context.Context, q string, args ...any) (int64, bool, error) {
	var n int64
	err := t.tx.QueryRow(ctx, q, args...).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return n, err == nil, err
}

// stagingTable receives a request's rows by COPY on PostgreSQL: one binary stream instead of thousands of bound
// parameters that the server parses and plans anew in every statement. It is a temporary table, private to its
// connection (so servers sharing a database never see each other's rows), created once per connection and
// emptied by every commit or rollback. resolved is the results column; latest marks the row of each key that
// latestPerKey would keep; seq is the key order put sorted the rows in.
const stagingTable = "ingest_staging"

var (
	createStaging = "CREATE TEMP TABLE IF NOT EXISTS " + stagingTable + " (LIKE result_history, " +
		"resolved INTEGER NOT NULL, latest BOOLEAN NOT NULL, seq INTEGER NOT NULL) ON COMMIT DELETE ROWS"
	stagingColumns = append(slices.Clone(historyColumns), "resolved", "latest", "seq")

	// The same statements as the multi-row INSERTs, fed from the staging table in key order; the received time
	// is also the first-seen and updated time, as in put.
	// It answers the keys it inserted per cluster: an inserted row has no xmax (no transaction replaced or
	// locked it), an updated one has this transaction's.
	upsertFromStaging = "WITH upserted AS (INSERT INTO results (" + strings.Join(upsertColumns, ", ") + ") SELECT " +
		strings.Join(rowColumns, ", ") + ", resolved, received_unix_nano, received_unix_nano FROM " + stagingTable +
		" WHERE latest ORDER BY seq" + upsertSuffix + " RETURNING cluster, xmax = 0 AS inserted)" +
		" SELECT cluster, COUNT(*) FROM upserted WHERE inserted GROUP BY cluster"
	historyFromStaging = "INSERT INTO result_history (" + strings.Join(historyColumns, ", ") + ") SELECT " +
		strings.Join(historyColumns, ", ") + " FROM " + stagingTable + " ORDER BY seq" + historySuffix
)

// putCopy is put on PostgreSQL: the rows are copied into the staging table, then both tables are written from
// it by one statement each, in one transaction.
func (s *Store) putCopy(ctx context.Context, rows []Row) error {
	sortByKey(rows)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("COPY needs a pgx connection, not %T", driverConn)
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, createStaging); err != nil {
			return fmt.Errorf("creating the staging table: %w", err)
		}
		ids, err := s.resolveMetadata(ctx, pgxTx{tx}, rows)
		if err != nil {
			return err
		}
		latest := latestMarks(rows)
		src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			resolved := boolInt(rows[i].State == string(policyresult.StateResolved))
			return append(rows[i].args(), rows[i].at, resolved, latest[i], i), nil
		})
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{stagingTable}, stagingColumns, src); err != nil {
			return fmt.Errorf("copying %d results: %w", len(rows), err)
		}
		inserted, err := upsertStaged(ctx, tx)
		if err != nil {
			return fmt.Errorf("storing %d results: %w", len(rows), err)
		}
		if err := addClusterKeys(ctx, pgxTx{tx}, inserted); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		s.metadataCache.remember(ids)
		return nil
	})
}

// upsertStaged writes both tables from the staging table, the two statements sent together, and returns the
// keys inserted per cluster.
func upsertStaged(ctx context.Context, tx pgx.Tx) (map[string]int64, error) {
	var b pgx.Batch
	b.Queue(upsertFromStaging)
	b.Queue(historyFromStaging)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	inserted := map[string]int64{}
	for rows.Next() {
		var cluster string
		var n int64
		if err := rows.Scan(&cluster, &n); err != nil {
			rows.Close()
			return nil, err
		}
		inserted[cluster] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	return inserted, br.Close()
}

// latestPerKey keeps, of the rows of each key (rows are sorted by key, in request order within a key), the one
// that applying them one after another would leave: a later row replaces an earlier one when it is at least as
// recent. One statement must not update a row twice (PostgreSQL refuses), so duplicates are settled here.
func latestPerKey(rows []Row) []Row {
	out := make([]Row, 0, len(rows))
	for i, keep := range latestMarks(rows) {
		if keep {
			out = append(out, rows[i])
		}
	}
	return out
}

// latestMarks marks the rows latestPerKey keeps.
func latestMarks(rows []Row) []bool {
	marks := make([]bool, len(rows))
	best := -1
	for i := range rows {
		if best >= 0 && rows[best].Key == rows[i].Key {
			if rows[i].Order < rows[best].Order {
				continue
			}
			marks[best] = false
		}
		marks[i], best = true, i
	}
	return marks
}
