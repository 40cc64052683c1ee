// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package connlimit bounds the connections a server holds at once.
package connlimit // import "github.com/otelcol-policy/otelcol-policy/internal/connlimit"

import (
	"net"
	"sync"
)

// Listener serves at most max connections of l at once. One more is accepted and closed at once, and refused is
// called: a flood of connections then costs a file descriptor for a moment, not a connection's buffers and
// goroutines, and the client learns it was refused rather than waiting in the kernel's backlog. A connection
// that is closed frees its place.
func Listener(l net.Listener, max int, refused func()) net.Listener {
	return &listener{Listener: l, slots: make(chan struct{}, max), refused: refused}
}

type listener struct {
	net.Listener
	slots   chan struct{}
	refused func()
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &conn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			l.refused()
			_ = c.Close()
		}
	}
}

type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
