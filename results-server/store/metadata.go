// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// A request's extra_metadata applies to all of its results, and a collector sends the same one with every
// request: it is stored once per distinct value, in the metadata table, and the rows of both tables reference
// it by id (schema version 5).

// Metadata is a request's extra_metadata as the metadata table holds it: its canonical JSON (json.Marshal of
// the map, keys sorted) and the hex SHA-256 of that JSON, its unique key.
type Metadata struct {
	json, hash string
}

// NewMetadata encodes extra_metadata for the rows of one request. The caller bounds it first: it is decoded
// from a request, and stored once per distinct value.
func NewMetadata(m map[string]string) (*Metadata, error) {
	if m == nil {
		m = map[string]string{} // stored as {}, not null
	}
	b, err := json.Marshal(m)
	if err != nil { // a map of strings always encodes
		return nil, err
	}
	return &Metadata{json: string(b), hash: metadataHash(b)}, nil
}

func metadataHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sqliteSHA256 is metadataHash as an SQLite function, for the migration that hashes the values stored before
// (PostgreSQL has sha256 built in: see dialect.metadataHash).
const sqliteSHA256 = "results_sha256"

func init() {
	if err := sqlite.RegisterDeterministicScalarFunction(sqliteSHA256, 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return metadataHash([]byte(v)), nil
			case []byte:
				return metadataHash(v), nil
			case nil:
				return nil, nil
			}
			return nil, fmt.Errorf("%s: want text, not %T", sqliteSHA256, args[0])
		}); err != nil {
		panic(err)
	}
}

// txRunner is what the store's writers need of a transaction, on either driver.
type txRunner interface {
	exec(ctx context.Context, q string, args ...any) error
	// queryInt scans one integer; found is false when there is no row.
	queryInt(ctx context.Context, q string, args ...any) (n int64, found bool, err error)
}

// metadataCacheSize bounds the ids kept in memory: a collector sends one value, so a few per cluster.
const metadataCacheSize = 1024

// metadataIDs caches the ids of metadata values. Nothing deletes a metadata row, so an id, once committed, never
// changes, on any replica.
type metadataIDs struct {
	mu  sync.Mutex
	ids map[string]int64
}

func (c *metadataIDs) get(hash string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.ids[hash]
	return id, ok
}

// remember keeps ids committed; a full cache starts over rather than tracking use.
func (c *metadataIDs) remember(ids map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil || len(c.ids)+len(ids) > metadataCacheSize {
		c.ids = make(map[string]int64, len(ids))
	}
	for h, id := range ids {
		c.ids[h] = id
	}
}

// resolveMetadata sets the metadata id of rows, inserting the values the table lacks, in the transaction that
// writes the rows: an id found or made in a transaction that then rolls back is not used again (SQLite may give
// it to another value). It returns the ids, which the caller remembers once the transaction committed.
func (s *Store) resolveMetadata(ctx context.Context, tx txRunner, rows []Row) (map[string]int64, error) {
	ids := map[string]int64{}
	for i := range rows {
		m := rows[i].Meta
		id, ok := ids[m.hash]
		if !ok {
			var err error
			if id, err = s.metadataID(ctx, tx, m); err != nil {
				return nil, fmt.Errorf("storing extra_metadata: %w", err)
			}
			ids[m.hash] = id
		}
		rows[i].metadataID = id
	}
	return ids, nil
}

func (s *Store) metadataID(ctx context.Context, tx txRunner, m *Metadata) (int64, error) {
	if id, ok := s.metadataCache.get(m.hash); ok {
		return id, nil
	}
	const find = `SELECT id FROM metadata WHERE hash = $1`
	if id, found, err := tx.queryInt(ctx, find, m.hash); err != nil || found {
		return id, err
	}
	// Another server may insert the same value meanwhile: the unique hash makes one of the inserts a no-op,
	// after waiting for the other's transaction.
	if err := tx.exec(ctx, `INSERT INTO metadata (hash, json) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`,
		m.hash, m.json); err != nil {
		return 0, err
	}
	id, found, err := tx.queryInt(ctx, find, m.hash)
	if err == nil && !found {
		err = errors.New("inserted metadata not found")
	}
	return id, err
}
