// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"database/sql"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// defaultRetention is the retention the README documents: none.
var defaultRetention = retentionOptions{interval: time.Hour}

func TestRetentionFlags(t *testing.T) {
	base := []string{"--listen", "127.0.0.1:0"}
	o, err := parseServeFlags(base, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, server.Retention{Interval: time.Hour}, o.retention.config(), "keeps everything by default")
	assert.False(t, o.retention.config().Enabled())

	for _, tt := range []struct {
		args []string
		want server.Retention
	}{
		{[]string{"--history-retention", "90d"}, server.Retention{History: 90 * 24 * time.Hour, Interval: time.Hour}},
		{[]string{"--resolved-retention", "36h30m", "--retention-interval", "5m"},
			server.Retention{Resolved: 36*time.Hour + 30*time.Minute, Interval: 5 * time.Minute}},
		{[]string{"--history-retention", "0", "--resolved-retention", "0d"}, server.Retention{Interval: time.Hour}},
	} {
		o, err := parseServeFlags(append(base, tt.args...), io.Discard)
		require.NoError(t, err, tt.args)
		assert.Equal(t, tt.want, o.retention.config(), tt.args)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--history-retention", "-1d"}, `invalid value "-1d" for flag -history-retention: "-1d": must not be negative`},
		{[]string{"--resolved-retention", "-5m"}, `invalid value "-5m" for flag -resolved-retention: "-5m": must not be negative`},
		{[]string{"--history-retention", "ninety days"}, `"ninety days": want a whole number of days (90d) or a Go duration (720h)`},
		{[]string{"--history-retention", "1.5d"}, `"1.5d": want a whole number of days (90d) or a Go duration (720h)`},
		{[]string{"--history-retention", "9999999d"}, `"9999999d": too long`},
		{[]string{"--retention-interval", "0s"}, "--retention-interval must be positive"},
		{[]string{"--retention-interval", "-1h"}, "--retention-interval must be positive"},
	} {
		_, err := parseServeFlags(append(base, tt.args...), io.Discard)
		var ue usageError
		require.ErrorAs(t, err, &ue, tt.args)
		assert.ErrorContains(t, err, tt.want, tt.args)
	}
}

func TestDaysString(t *testing.T) {
	for s, want := range map[string]string{"90d": "90d", "48h": "2d", "90m": "1h30m0s", "0": "0"} {
		var d days
		require.NoError(t, d.Set(s))
		assert.Equal(t, want, d.String(), s)
	}
}

// TestServePrunes runs serve with both retentions on a database whose results were received and resolved long
// ago: the pruner runs at start, counts what it deleted in /metrics, and keeps the result that is not resolved.
func TestServePrunes(t *testing.T) {
	result := func(name string, state policyresult.State) policyresult.Result {
		return policyresult.Result{Cluster: "east", Source: "kyverno", Policy: "require-labels", Rule: "check",
			Outcome: policyresult.OutcomeFail, State: state,
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name}}
	}
	failing, resolved := result("cart", policyresult.StateNew), result("web", policyresult.StateResolved)
	dsn := forwardDB(t, resultsapi.FromResult(&failing), resultsapi.FromResult(&resolved))
	db, err := sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite://"))
	require.NoError(t, err)
	defer db.Close()
	// Received and resolved in 1970, as far as the server's clock is concerned.
	_, err = db.Exec(`UPDATE result_history SET received_unix_nano = 0`)
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE results SET updated_unix_nano = 0, first_seen_unix_nano = 0`)
	require.NoError(t, err)

	ports, err := freeport.Ports(2)
	require.NoError(t, err)
	httpAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	o, err := parseServeFlags([]string{"--listen", "127.0.0.1:" + strconv.Itoa(ports[0]), "--http-listen", httpAddr,
		"--db", dsn, "--history-retention", "1d", "--resolved-retention", "90d"}, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, zap.NewNop()) }()
	pruned := func(table string) float64 {
		v, err := selfmetrics.ReadMetric("http://"+httpAddr+"/metrics", "results_server_pruned_rows_total", `table="`+table+`"`)
		if err != nil {
			return -1
		}
		return v
	}
	require.Eventually(t, func() bool { return pruned("result_history") == 2 && pruned("results") == 1 },
		10*time.Second, 20*time.Millisecond, "the prune at start deletes both history rows and the resolved result")
	cancel()
	require.NoError(t, <-done)

	var keys []string
	rows, err := db.Query(`SELECT key FROM results`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{failing.Key()}, keys, "the failing result stays however old")
}
