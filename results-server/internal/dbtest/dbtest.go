// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package dbtest runs a test of the results server against each database it supports: SQLite files and a real
// PostgreSQL (internal/testutil/pgtest, skipped under -short).
package dbtest // import "github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
)

// EachBackend runs f against SQLite and against PostgreSQL; newDSN gives an empty database each call.
func EachBackend(t *testing.T, f func(t *testing.T, newDSN func(t *testing.T) string)) {
	t.Run("sqlite", func(t *testing.T) {
		f(t, func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "results.db") })
	})
	t.Run("postgres", func(t *testing.T) {
		pg := pgtest.Start(t)
		var n atomic.Int64
		f(t, func(t *testing.T) string { return pg.CreateDB(fmt.Sprintf("results%d", n.Add(1))) })
	})
}
