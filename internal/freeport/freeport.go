// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package freeport finds free loopback TCP ports for the servers tests start.
package freeport // import "github.com/otelcol-policy/otelcol-policy/internal/freeport"

import "net"

// Ports returns n distinct ports that were free on 127.0.0.1. The listeners are held until all are found, so the
// ports differ from each other; another process may still take one before the caller binds it.
func Ports(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
