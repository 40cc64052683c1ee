// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package connlimit

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit/connlimittest"
)

// server is a Listener on loopback whose accepted connections arrive on accepted, counting what the limits
// closed.
type server struct {
	t        *testing.T
	l        *Listener
	accepted chan net.Conn
	closed   [NumReasons]atomic.Int64
}

func newServer(t *testing.T, cfg Config) *server {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &server{t: t, accepted: make(chan net.Conn, 100)}
	cfg.Closed = func(r Reason) { s.closed[r].Add(1) }
	s.l = New(inner, cfg)
	t.Cleanup(func() { s.l.Close() })
	go func() {
		for {
			c, err := s.l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			s.accepted <- c
		}
	}()
	return s
}

// dialAccepted dials and returns the client's end and the server's, once the server accepted it.
func (s *server) dialAccepted(from string) (client, served net.Conn) {
	s.t.Helper()
	client = connlimittest.DialFrom(s.t, from, s.l.Addr().String())
	select {
	case served = <-s.accepted:
	case <-time.After(5 * time.Second):
		s.t.Fatal("the connection was not accepted")
	}
	return client, served
}

// closedByServer tells whether the server closed the client's connection within wait.
func closedByServer(t *testing.T, client net.Conn, wait time.Duration) bool {
	t.Helper()
	return !connlimittest.StillOpen(t, client, wait)
}

func (s *server) count(r Reason) int64 { return s.closed[r].Load() }

// TestListenerRefusesBeyondMax: with Max connections held, all proved, one more is closed at once; a closed
// connection frees its place once, however often it is closed.
func TestListenerRefusesBeyondMax(t *testing.T) {
	s := newServer(t, Config{Max: 2})
	var held []net.Conn
	for range 2 {
		_, c := s.dialAccepted("")
		require.True(t, ProveConn(c))
		held = append(held, c)
	}
	third := connlimittest.DialFrom(t, "", s.l.Addr().String())
	assert.True(t, closedByServer(t, third, 5*time.Second), "the third connection is closed")
	require.Eventually(t, func() bool { return s.count(Refused) == 1 }, 5*time.Second, 5*time.Millisecond)

	// Closing one frees its place (twice closing frees it once).
	held[0].Close()
	held[0].Close()
	_, c := s.dialAccepted("")
	ProveConn(c)
	fourth := connlimittest.DialFrom(t, "", s.l.Addr().String())
	assert.True(t, closedByServer(t, fourth, 5*time.Second), "beyond the limit again")
	require.Eventually(t, func() bool { return s.count(Refused) == 2 }, 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, s.count(Evicted))
}

// TestSilentEvictedForNew: with the listener full, a new connection takes the place of the oldest silent one
// rather than being refused; a proved one keeps its place however old.
func TestSilentEvictedForNew(t *testing.T) {
	s := newServer(t, Config{Max: 3})
	_, provedConn := s.dialAccepted("")
	ProveConn(provedConn)
	first, _ := s.dialAccepted("")
	second, _ := s.dialAccepted("")
	third, servedThird := s.dialAccepted("")
	assert.True(t, closedByServer(t, first, 5*time.Second), "the oldest silent connection is evicted")
	assert.False(t, ClosedByLimit(servedThird), "the new one is open")
	assert.False(t, closedByServer(t, second, 100*time.Millisecond), "the younger silent one stays")
	assert.False(t, closedByServer(t, third, 100*time.Millisecond), "the new one stays")
	assert.Equal(t, int64(1), s.count(Evicted))
	assert.Zero(t, s.count(Refused))

	// The proved one is never evicted: the next two evict the two silent ones.
	s.dialAccepted("")
	s.dialAccepted("")
	assert.True(t, closedByServer(t, second, 5*time.Second))
	assert.True(t, closedByServer(t, third, 5*time.Second))
	assert.Equal(t, int64(3), s.count(Evicted))
	_, err := provedConn.Write([]byte("x"))
	assert.NoError(t, err, "the proved connection is open")
}

// TestEvictsFromTheSourceWithMostSilent: a source holding many silent connections loses its own when the
// listener is full, even when another source's silent connection is older.
func TestEvictsFromTheSourceWithMostSilent(t *testing.T) {
	s := newServer(t, Config{Max: 4})
	legit, _ := s.dialAccepted("127.0.0.1")
	a1, _ := s.dialAccepted("127.0.0.2")
	a2, _ := s.dialAccepted("127.0.0.2")
	a3, _ := s.dialAccepted("127.0.0.2")
	legit2, _ := s.dialAccepted("127.0.0.1")
	assert.True(t, closedByServer(t, a1, 5*time.Second), "the oldest of the heaviest source is evicted")
	assert.False(t, closedByServer(t, legit, 100*time.Millisecond), "the oldest connection, of a light source, stays")
	assert.False(t, closedByServer(t, legit2, 100*time.Millisecond))
	assert.False(t, closedByServer(t, a2, 100*time.Millisecond))
	assert.False(t, closedByServer(t, a3, 100*time.Millisecond))
	assert.Equal(t, int64(1), s.count(Evicted))
}

// TestMaxSilentPerSource: a source at its limit of silent connections evicts its own oldest, with room in the
// listener to spare, and other sources' connections stay; proved connections do not count.
func TestMaxSilentPerSource(t *testing.T) {
	s := newServer(t, Config{Max: 100, MaxSilentPerSource: 2})
	other, _ := s.dialAccepted("127.0.0.1")
	_, p := s.dialAccepted("127.0.0.2")
	ProveConn(p)
	a1, _ := s.dialAccepted("127.0.0.2")
	a2, _ := s.dialAccepted("127.0.0.2")
	a3, _ := s.dialAccepted("127.0.0.2")
	assert.True(t, closedByServer(t, a1, 5*time.Second), "over the source's limit: its oldest silent is evicted")
	assert.False(t, closedByServer(t, a2, 100*time.Millisecond))
	assert.False(t, closedByServer(t, a3, 100*time.Millisecond))
	assert.False(t, closedByServer(t, other, 100*time.Millisecond), "another source's connection stays")
	assert.Equal(t, int64(1), s.count(Evicted))
}

// TestSilentTimeout: a connection still silent SilentTimeout after its accept is closed; a proved one is not.
func TestSilentTimeout(t *testing.T) {
	s := newServer(t, Config{Max: 10, SilentTimeout: 200 * time.Millisecond})
	quiet, served := s.dialAccepted("")
	talker, servedTalker := s.dialAccepted("")
	ProveConn(servedTalker)
	opened := time.Now()
	assert.True(t, closedByServer(t, quiet, 5*time.Second), "the silent connection is closed")
	assert.GreaterOrEqual(t, time.Since(opened), 150*time.Millisecond, "not before its timeout")
	assert.True(t, ClosedByLimit(served))
	assert.False(t, closedByServer(t, talker, 400*time.Millisecond), "the proved connection stays")
	assert.False(t, ClosedByLimit(servedTalker))
	assert.Equal(t, int64(1), s.count(TimedOut))
}

// TestProveThroughWrappers: a connection is proved through a tls.Conn wrapping it (http.Server.ConnContext
// gets one) and through its remote address (gRPC's stats handlers get only that).
func TestProveThroughWrappers(t *testing.T) {
	s := newServer(t, Config{Max: 10, SilentTimeout: 300 * time.Millisecond})
	// Through tls.Conn and WithConn.
	client, served := s.dialAccepted("")
	tc := tls.Server(served, &tls.Config{MinVersion: tls.VersionTLS12})
	ctx := WithConn(context.Background(), tc)
	Prove(ctx)
	Prove(ctx) // cheap and harmless again
	assert.False(t, closedByServer(t, client, 600*time.Millisecond), "proved through the tls.Conn")

	// Through the remote address.
	client2, served2 := s.dialAccepted("")
	ctx2, found := s.l.WithRemote(context.Background(), served2.RemoteAddr())
	require.True(t, found)
	Prove(ctx2)
	assert.False(t, closedByServer(t, client2, 600*time.Millisecond), "proved by its remote address")

	// Neither finds anything for a connection the listener does not hold.
	var nothing net.Conn = &net.TCPConn{}
	assert.False(t, ProveConn(nothing))
	Prove(WithConn(context.Background(), nothing))
	_, found = s.l.WithRemote(context.Background(), &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1})
	assert.False(t, found)
	assert.Zero(t, s.count(TimedOut))
}

func TestSourceOf(t *testing.T) {
	assert.Equal(t, "192.0.2.7", sourceOf(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 9}))
	assert.Equal(t, "192.0.2.7", sourceOf(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 9}))
	assert.Equal(t, "2001:db8:1:2::", sourceOf(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 9}),
		"an IPv6 /64 is one source")
	assert.Empty(t, sourceOf(&net.UnixAddr{Name: "@", Net: "unix"}))
}

// TestConcurrentChurn: connections accepted, proved, closed and evicted from many goroutines at once never
// take the listener past Max, and every place is given back (run with -race).
func TestConcurrentChurn(t *testing.T) {
	const max = 8
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := New(inner, Config{Max: max, MaxSilentPerSource: 4, SilentTimeout: 20 * time.Millisecond})
	defer l.Close()
	var over atomic.Int64
	var served sync.WaitGroup
	go func() {
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			if l.held > max {
				over.Add(1)
			}
			l.mu.Unlock()
			served.Add(1)
			go func() {
				defer served.Done()
				if i%3 == 0 {
					ProveConn(c)
				}
				_, _ = io.Copy(io.Discard, c) // until the client or the limits close it
				c.Close()
			}()
		}
	}()
	var clients sync.WaitGroup
	for g := range 8 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			from := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}[g%3]
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
			for range 50 {
				c, err := d.Dial("tcp", inner.Addr().String())
				if err != nil {
					continue
				}
				_ = c.SetReadDeadline(time.Now().Add(time.Duration(g) * time.Millisecond))
				_, _ = c.Read(make([]byte, 1))
				c.Close()
			}
		}()
	}
	clients.Wait()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.held == 0 && len(l.sources) == 0 && len(l.byRemote) == 0
	}, 10*time.Second, 10*time.Millisecond, "every place given back")
	l.Close()
	served.Wait()
	assert.Zero(t, over.Load(), "accepts that found the listener past Max")
}
