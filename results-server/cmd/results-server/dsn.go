// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// DBEnv is the environment variable serve and fleet take the database DSN from when neither --db nor --db-file
// is given: a PostgreSQL DSN holds a password, which --db would show in the process list to every user of the
// machine.
const DBEnv = "RESULTS_SERVER_DB"

// maxDBFile bounds what --db-file reads: a DSN is a line.
const maxDBFile = 64 << 10

// dbFlags are the database flags of serve and fleet.
type dbFlags struct{ db, file string }

func (d *dbFlags) register(fs *flag.FlagSet, usage string) {
	fs.StringVar(&d.db, "db", DefaultDB, usage+"; without it, --db-file or $"+DBEnv)
	fs.StringVar(&d.file, "db-file", "", "file holding the database DSN (its first line), instead of --db: keeps a password off the command line")
}

// dsn is the database DSN: --db, else the first line of --db-file, else $RESULTS_SERVER_DB, else DefaultDB.
// from says which, for the log.
func (d *dbFlags) dsn(fs *flag.FlagSet, getenv func(string) string) (dsn, from string, err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["db"] && set["db-file"]:
		return "", "", errors.New("--db and --db-file: give one")
	case set["db"] && d.db == "":
		return "", "", errors.New("--db must not be empty")
	case set["db"]:
		return d.db, "--db", nil
	case set["db-file"]:
		dsn, err := readDSN(d.file)
		return dsn, "--db-file", err
	case getenv(DBEnv) != "":
		return getenv(DBEnv), "$" + DBEnv, nil
	}
	return DefaultDB, "default", nil
}

// readDSN reads the first line of a DSN file, without its surrounding space.
func readDSN(path string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // the operator names the file on the command line
	if err != nil {
		return "", fmt.Errorf("--db-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDBFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("--db-file %s: %w", path, err)
	case len(b) > maxDBFile:
		return "", fmt.Errorf("--db-file %s: larger than %d bytes, not a DSN", path, maxDBFile)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", fmt.Errorf("--db-file %s: its first line is empty, want a DSN", path)
	}
	return line, nil
}

// hasPassword reports whether a DSN holds a password (a URL's user:password, or a password= parameter).
func hasPassword(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return false
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	return u.Query().Has("password")
}
