// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// readTokens reads a token file: one token per line with what it may do, surrounding space trimmed, blank lines
// and lines starting with # ignored.
//
//	TOKEN                             reads and writes every cluster (the format before grants)
//	TOKEN write=prod-eu-1             forwards results of cluster prod-eu-1, reads nothing
//	TOKEN write=prod-eu-1,prod-eu-2 read
//	TOKEN write=*                     forwards results of any cluster
//	TOKEN read                        reads the fleet view (people, Prometheus), forwards nothing
//
// Errors name the line, never the token.
func readTokens(path string) ([]server.Token, error) {
	f, err := os.Open(path) //nolint:gosec // the operator names the token file on the command line
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tokens []server.Token
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := parseTokenLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s, line %d: %w", path, n, err)
		}
		t.Name = fmt.Sprintf("%s:%d", path, n)
		tokens = append(tokens, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tokens) == 0 {
		// An empty file would silently turn authentication off.
		return nil, fmt.Errorf("%s has no tokens", path)
	}
	return tokens, nil
}

func parseTokenLine(line string) (server.Token, error) {
	fields := strings.Fields(line)
	if len(fields) == 1 {
		return server.FullAccess(fields[0]), nil
	}
	t := server.Token{Secret: fields[0]}
	for _, g := range fields[1:] {
		clusters, isWrite := strings.CutPrefix(g, "write=")
		switch {
		case g == "read":
			t.Read = true
		case isWrite && clusters != "":
			for c := range strings.SplitSeq(clusters, ",") {
				if c == "" {
					return server.Token{}, fmt.Errorf("%q names an empty cluster", g)
				}
				t.Write = append(t.Write, c)
			}
		default:
			return server.Token{}, fmt.Errorf("%q: want read or write=CLUSTER[,CLUSTER...] (write=* for every cluster)", g)
		}
	}
	return t, nil
}
