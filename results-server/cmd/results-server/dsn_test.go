// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDBFlags: the DSN is --db, else the first line of --db-file, else $RESULTS_SERVER_DB, else the default;
// --db with --db-file, an empty --db and a --db-file without a DSN are mistakes.
func TestDBFlags(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	dsnFile := file("dsn", "  postgres://results:s3cret@db:5432/results  \n# the second line is not read\n")
	env := map[string]string{}
	for _, tt := range []struct {
		args            []string
		env             string
		want, wantFrom  string
		wantErrContains string
	}{
		{args: nil, want: DefaultDB, wantFrom: "default"},
		{args: nil, env: "sqlite:///env.db", want: "sqlite:///env.db", wantFrom: "$RESULTS_SERVER_DB"},
		{args: []string{"--db", "sqlite:///flag.db"}, env: "sqlite:///env.db", want: "sqlite:///flag.db", wantFrom: "--db"},
		{args: []string{"--db-file", dsnFile}, env: "sqlite:///env.db", want: "postgres://results:s3cret@db:5432/results", wantFrom: "--db-file"},
		{args: []string{"--db", "sqlite:///a.db", "--db-file", dsnFile}, wantErrContains: "--db and --db-file: give one"},
		{args: []string{"--db", ""}, wantErrContains: "--db must not be empty"},
		{args: []string{"--db-file", file("empty", "\n\n")}, wantErrContains: "its first line is empty"},
		{args: []string{"--db-file", filepath.Join(dir, "missing")}, wantErrContains: "no such file"},
	} {
		env[DBEnv] = tt.env
		var d dbFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		d.register(fs, "database")
		require.NoError(t, fs.Parse(tt.args))
		dsn, from, err := d.dsn(fs, func(k string) string { return env[k] })
		if tt.wantErrContains != "" {
			assert.ErrorContains(t, err, tt.wantErrContains, "%v", tt.args)
			assert.NotContains(t, err.Error(), "s3cret")
			continue
		}
		require.NoError(t, err, "%v", tt.args)
		assert.Equal(t, tt.want, dsn, "%v", tt.args)
		assert.Equal(t, tt.wantFrom, from, "%v", tt.args)
	}
}

func TestHasPassword(t *testing.T) {
	assert.True(t, hasPassword("postgres://results:s3cret@db/results"))
	assert.True(t, hasPassword("postgres://db/results?user=results&password=s3cret"))
	assert.False(t, hasPassword("postgres://results@db/results?sslmode=verify-full"))
	assert.False(t, hasPassword("sqlite:///var/lib/results.db"))
}

// TestFleetReadsDSNFromFileAndEnvironment: the fleet command takes the DSN from --db-file, or from
// $RESULTS_SERVER_DB.
func TestFleetReadsDSNFromFileAndEnvironment(t *testing.T) {
	dsn := fleetDB(t)
	file := filepath.Join(t.TempDir(), "dsn")
	require.NoError(t, os.WriteFile(file, []byte(dsn+"\n"), 0o600))
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"fleet", "--db-file", file, "--cluster", "west"}, &out, io.Discard))
	assert.Contains(t, out.String(), "openssl is vulnerable")

	t.Setenv(DBEnv, dsn)
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"fleet", "--cluster", "west"}, &out, io.Discard))
	assert.Contains(t, out.String(), "openssl is vulnerable")
}
