// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package arrivals

import (
	"context"
	"database/sql"
	"fmt"

	_ "modernc.org/sqlite" // the results server's SQLite driver
)

// ResultKeys reads the current-state result keys of one cluster from a results server's SQLite database,
// read-only, while the server may be writing (WAL). The server keeps one row per key, so an id arrives at most
// once here: duplicates cannot be seen in this store.
func ResultKeys(ctx context.Context, path, cluster string) (map[string]int, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT key FROM results WHERE cluster = ?`, cluster)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer rows.Close()
	perID := map[string]int{}
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return nil, err
		}
		perID[key]++
	}
	return perID, rows.Err()
}
