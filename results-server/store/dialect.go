// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

// dialect holds what differs between the databases; the SQL itself is shared, with $n placeholders, which
// both drivers bind (SQLite's per-row INSERTs use ?, see insertSQL).
type dialect struct {
	name string
	// migrationLock serialises migrations of servers starting at once against one database.
	migrationLock string
	// skipLocked ends the row-selecting subquery of a prune (see prune.sql): SQLite has one writer at a time and
	// no row locks.
	skipLocked string
	// copyRows writes a request through COPY and a staging table (see putCopy) instead of one INSERT per row:
	// on PostgreSQL every statement is a round trip, and a multi-row statement's thousands of parameters are
	// parsed and planned anew each time.
	copyRows bool
	// like is the operator of the fleet view's text search, which ignores case: SQLite's LIKE ignores ASCII
	// case, PostgreSQL's does not.
	like string
	// byteOrder follows a name in ORDER BY so that names sort by their bytes, as SQLite's default BINARY
	// collation does; PostgreSQL's database collation may differ, and pages must cut alike.
	byteOrder string
}

var (
	sqliteDialect   = dialect{name: "sqlite", like: "LIKE"}
	postgresDialect = dialect{name: "postgres", migrationLock: `SELECT pg_advisory_xact_lock(7202611221)`,
		skipLocked: " FOR UPDATE SKIP LOCKED", copyRows: true, like: "ILIKE", byteOrder: ` COLLATE "C"`}
)

// sqlitePragmas: WAL lets the fleet view read while a request writes; busy_timeout makes concurrent writers
// (of other processes: this one has a single writer, see groupCommit) wait for each other instead of failing;
// immediate transactions take the write lock at BEGIN, so two writers never both read and then deadlock on
// upgrading. synchronous stays FULL: a forwarded result is acknowledged only once it survives a power loss.
// cache_size: 32 MiB of pages per connection instead of 2 MiB, so that the indexes a request updates stay in
// memory as the tables grow (it cut a third of the ingest's system time).
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=cache_size(-32768)&_txlock=immediate"

// sqliteReadPragmas are the fleet view's connections': read only, and SQLite's default cache of 2 MiB, which
// also bounds a query's sorter before it spills to a temporary file. A query reads its pages once, so a larger
// cache would only hold what one query read, once per connection.
const sqliteReadPragmas = "_pragma=busy_timeout(10000)&_pragma=cache_size(-2048)&_pragma=query_only(1)"

// maxIdle closes a pool's connection unused for this long, and its page cache with it.
const maxIdle = time.Minute

// Pools bound the database connections of a Store.
type Pools struct {
	// Writers bounds the PostgreSQL connections storing requests and pruning at once; SQLite has one writer.
	Writers int
	// Readers bounds the connections answering the fleet view: one per query in flight.
	Readers int
}

// openPools opens the database's connection pools: write stores requests and prunes (SQLite's one writer, or
// p.Writers PostgreSQL connections); read answers the fleet view, p.Readers connections.
func openPools(ctx context.Context, dsn string, p Pools) (write, read *sql.DB, d dialect, err error) {
	write, d, err = openDB(ctx, dsn, "")
	if err != nil {
		return nil, nil, d, err
	}
	writers := p.Writers
	if !d.copyRows {
		// SQLite takes one writer at a time: the group commit, or a prune.
		writers = 1
	}
	write.SetMaxOpenConns(writers)
	write.SetMaxIdleConns(writers)
	write.SetConnMaxIdleTime(maxIdle)
	read, _, err = openDB(ctx, dsn, sqliteReadPragmas)
	if err != nil {
		write.Close()
		return nil, nil, d, err
	}
	read.SetMaxOpenConns(p.Readers)
	read.SetMaxIdleConns(p.Readers)
	read.SetConnMaxIdleTime(maxIdle)
	return write, read, d, nil
}

// openDB opens the database a DSN names, creating an SQLite file's directory. pragmas replace sqlitePragmas
// when set.
func openDB(ctx context.Context, dsn, pragmas string) (*sql.DB, dialect, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite://"):
		path := strings.TrimPrefix(dsn, "sqlite://")
		if path == "" || strings.ContainsAny(path, "?#") {
			return nil, dialect{}, fmt.Errorf("database %q: want sqlite:///absolute/path.db or sqlite://./relative.db", dsn)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, dialect{}, fmt.Errorf("database directory: %w", err)
		}
		db, err := sql.Open("sqlite", path+"?"+cmp.Or(pragmas, sqlitePragmas))
		if err != nil {
			return nil, dialect{}, err
		}
		return db, sqliteDialect, ping(ctx, db)
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, dialect{}, fmt.Errorf("database %s: %w", redact(dsn), err)
		}
		return db, postgresDialect, ping(ctx, db)
	case dsn == "":
		return nil, dialect{}, errors.New("no database: set a sqlite:// or postgres:// DSN")
	}
	return nil, dialect{}, fmt.Errorf("database %s: want a sqlite:// or postgres:// DSN", redact(dsn))
}

func ping(ctx context.Context, db *sql.DB) error {
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return err
	}
	return nil
}

// redact hides a DSN's password, for messages and logs.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return u.Redacted()
}
