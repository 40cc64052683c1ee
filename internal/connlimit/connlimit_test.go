// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package connlimit

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func TestListenerRefusesBeyondMax(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	l := Listener(inner, 2, func() { refused.Add(1) })
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	held := []net.Conn{<-accepted, <-accepted}

	// A third is closed at once: the client reads EOF.
	third := dial()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := third.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the third connection: %v, want EOF", err)
	}
	if refused.Load() != 1 {
		t.Fatalf("refused %d, want 1", refused.Load())
	}

	// Closing one frees its place (twice closing frees it once).
	held[0].Close()
	held[0].Close()
	dial()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("a freed place was not given to the next connection")
	}
	fourth := dial()
	_ = fourth.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := fourth.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("beyond the limit again: %v, want EOF", err)
	}
	if refused.Load() != 2 {
		t.Fatalf("refused %d, want 2", refused.Load())
	}
}
