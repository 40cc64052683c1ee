// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
)

// TestReadPool: the fleet view reads through connections of its own, one per query slot, read only, with a
// small page cache; SQLite's writer is alone.
func TestReadPool(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		st := openStore(t, newDSN(t))
		assert.Equal(t, testPools.Readers, st.read.Stats().MaxOpenConnections)
		writers := testPools.Writers
		if st.d == sqliteDialect {
			writers = 1
			var cache, queryOnly int
			require.NoError(t, st.read.QueryRow(`PRAGMA cache_size`).Scan(&cache))
			require.NoError(t, st.read.QueryRow(`PRAGMA query_only`).Scan(&queryOnly))
			assert.Equal(t, -2048, cache, "2 MiB")
			assert.Equal(t, 1, queryOnly)
			_, err := st.read.Exec(`DELETE FROM results`)
			assert.Error(t, err, "the read pool cannot write")
		}
		assert.Equal(t, writers, st.db.Stats().MaxOpenConnections)
	})
}
