// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package freeport finds free loopback TCP ports for the servers tests start.
package freeport // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// The ports handed out lie below the kernel's ephemeral range (32768–60999 on Linux): a port taken from the
// ephemeral range with Listen(":0") and closed can be given to the next outgoing connection of any process as its
// source port before the server that was meant to bind it starts, which made `make test`, whose packages run in
// parallel, fail with "address already in use".
const (
	first = 15000
	last  = 32000
)

var (
	mu sync.Mutex
	// held are the claims of this process on the ports it handed out, kept until it exits, so that no other test
	// process on the machine is given the same port meanwhile.
	held []*os.File
)

// Ports returns n distinct ports, free on 127.0.0.1 when they were checked and claimed for this process: no
// other process using this package is given them while this one runs.
func Ports(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	dir := filepath.Join(os.TempDir(), "otelcol-policy-ports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	out := make([]int, 0, n)
	start := rand.IntN(last - first)
	for i := 0; i < last-first && len(out) < n; i++ {
		port := first + (start+i)%(last-first)
		claim, err := claimPort(filepath.Join(dir, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			_ = claim.Close()
			continue
		}
		_ = l.Close()
		held = append(held, claim)
		out = append(out, port)
	}
	if len(out) < n {
		return nil, fmt.Errorf("freeport: %d of %d ports found in %d-%d: %w", len(out), n, first, last, errNoPorts)
	}
	return out, nil
}

var errNoPorts = errors.New("no free port left")
