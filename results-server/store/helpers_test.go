// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// t0 is the base of the tests' timestamps.
var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// testPools are the server's default pools.
var testPools = Pools{Writers: 8, Readers: 4}

func openStore(t *testing.T, dsn string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, dsn, testPools)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// testRow is a result of a Pod named name as the server stores it, its key and id those of the result model,
// without extra_metadata.
func testRow(t *testing.T, cluster, policy, name string, outcome policyresult.Outcome) Row {
	t.Helper()
	m := policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: policy, Rule: "check", Outcome: outcome,
		State: policyresult.StateNew, Timestamp: t0,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name, UID: "uid-" + name}}
	meta, err := NewMetadata(nil)
	require.NoError(t, err)
	ts := t0.UnixNano()
	return Row{Key: m.Key(), ID: m.ID(), Cluster: cluster, Source: m.Source, Policy: policy, Rule: m.Rule,
		Outcome: string(outcome), Resource: m.Resource, State: string(m.State), Timestamp: &ts, Order: ts, Meta: meta}
}

// count runs a query that counts, on the write pool.
func count(t *testing.T, st *Store, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, st.db.QueryRow(query, args...).Scan(&n), query)
	return n
}
