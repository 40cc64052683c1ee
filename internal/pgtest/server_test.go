// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package pgtest

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

func TestServer(t *testing.T) {
	s := Start(t)
	dsn := s.CreateDB("app")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, "a", 1); err != nil {
		t.Fatal(err)
	}
	var name string
	var v int
	if err := db.QueryRowContext(ctx, `SELECT current_database(), v FROM t WHERE k = 'a'`).Scan(&name, &v); err != nil {
		t.Fatal(err)
	}
	if name != "app" || v != 1 {
		t.Fatalf("got database %q and v %d, want app and 1", name, v)
	}
}
