// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package pgtest

import "testing"

func TestServer(t *testing.T) {
	s := Start(t)
	s.CreateDB("app")
	s.SQL("app", `CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)`)
	s.SQL("app", `INSERT INTO t VALUES ('a', 1) ON CONFLICT (k) DO UPDATE SET v = excluded.v`)
	if got := s.SQL("app", `SELECT current_database(), v FROM t WHERE k = 'a'`); got != "app|1" {
		t.Fatalf("got %q, want database app and v 1 (app|1)", got)
	}
}
