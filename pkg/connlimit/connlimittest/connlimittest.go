// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package connlimittest has the client's side of tests of connection limits: connections from a chosen
// loopback address (each a source of its own), and whether the server still holds one.
package connlimittest // import "github.com/otelcol-policy/otelcol-policy/pkg/connlimit/connlimittest"

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// StillOpen tells whether the server still holds c after wait: false when it closed it (the read ends with
// EOF or a reset), reading and discarding whatever the server sends meanwhile.
func StillOpen(t testing.TB, c net.Conn, wait time.Duration) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	_, err := io.Copy(io.Discard, c)
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// Dialer connects from the loopback address from (any when empty): Linux routes all of 127.0.0.0/8 to the
// loopback interface, so each of its addresses is a source of its own to a server on 127.0.0.1.
func Dialer(from string) *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return d
}

// DialFrom connects to the TCP address addr from the loopback address from, closing the connection when the
// test ends.
func DialFrom(t testing.TB, from, addr string) net.Conn {
	t.Helper()
	c, err := Dialer(from).Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
