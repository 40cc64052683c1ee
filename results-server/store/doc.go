// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package store is the results server's database, SQLite or PostgreSQL: the schema and its migrations, the
// idempotent writes of checked results (the current state per result key, the history of every outcome, the
// requests' extra_metadata once per distinct value, the keys per cluster and the clusters per token the quotas
// read), the retention's deletes, and the fleet view's queries, each bounded in the rows and bytes it returns.
// It checks nothing a client sent: package server does, before Put.
package store // import "github.com/otelcol-policy/otelcol-policy/results-server/store"
