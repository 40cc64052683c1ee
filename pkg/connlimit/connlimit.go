// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package connlimit bounds the connections a server holds at once, and keeps connections that have not shown
// they are clients from holding the places of those that have.
//
// A connection is silent from its accept until its server proves it (Prove): when it authenticated, or sent
// its first complete request or line, whatever shows a client at the other end rather than an open socket.
// Silent connections cost an attacker nothing but a connect, so they never keep a place from a new connection:
//   - when the listener holds Max connections, a new one evicts the oldest silent connection of the source
//     that holds the most silent ones; only when none is silent is the new one refused;
//   - a source (the remote IP of a TCP connection, its /64 for IPv6) holds at most MaxSilentPerSource silent
//     connections: one more evicts that source's oldest, so one source cannot evict another's;
//   - a connection still silent SilentTimeout after its accept is closed.
//
// A proved connection is never closed here: its server's own timeouts (idle, read) end it.
package connlimit // import "github.com/otelcol-policy/otelcol-policy/pkg/connlimit"

import (
	"container/list"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Reason says why the limits closed a connection.
type Reason int

const (
	// Refused: the listener held Max connections, none of them silent; the new one was closed on accept.
	Refused Reason = iota
	// Evicted: a silent connection closed to make room for a new one.
	Evicted
	// TimedOut: a connection still silent SilentTimeout after its accept.
	TimedOut
	// NumReasons is the number of reasons, for arrays of counters.
	NumReasons
)

func (r Reason) String() string { return [...]string{"refused", "evicted", "timed_out"}[r] }

// Config bounds the connections of one listener.
type Config struct {
	// Max is the most connections held at once.
	Max int
	// MaxSilentPerSource is the most silent connections one source holds at once; 0 is Max. Connections whose
	// source is not known (Unix sockets) are one source without this limit.
	MaxSilentPerSource int
	// SilentTimeout closes a connection still silent this long after its accept; 0 never does.
	SilentTimeout time.Duration
	// Closed is told of every connection the limits close, with why, just before they close it (so that a
	// client that saw its connection end finds it counted); it may be nil. It is called without locks held,
	// from Accept or from a timer.
	Closed func(Reason)
}

// Listener holds at most Config.Max connections of the listener it wraps.
type Listener struct {
	net.Listener
	cfg Config

	mu   sync.Mutex
	held int
	// accepted numbers the connections in the order of their accept.
	accepted uint64
	// sources holds, by source, the silent connections oldest first; a source without any has no entry.
	sources map[string]*list.List
	// byRemote finds a TCP connection by its remote address (WithRemote).
	byRemote map[string]*conn
}

// New wraps l in the limits of cfg. A refused connection is accepted and closed at once: a flood of connections
// then costs a file descriptor for a moment, not a connection's buffers and goroutines, and the client learns it
// was refused rather than waiting in the kernel's backlog.
func New(l net.Listener, cfg Config) *Listener {
	if cfg.MaxSilentPerSource <= 0 || cfg.MaxSilentPerSource > cfg.Max {
		cfg.MaxSilentPerSource = cfg.Max
	}
	return &Listener{Listener: l, cfg: cfg, sources: map[string]*list.List{}, byRemote: map[string]*conn{}}
}

// Accept returns the next connection the limits admit.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

type state int

const (
	silent state = iota
	proved
	dropped
)

type conn struct {
	net.Conn
	l      *Listener
	source string
	remote string
	seq    uint64
	// Under l.mu:
	state state
	// byLimit: the limits closed it.
	byLimit bool
	elem    *list.Element
	timer   *time.Timer
	// isProved lets Prove return without the lock once the connection proved itself.
	isProved atomic.Bool
}

func (l *Listener) admit(c net.Conn) *conn {
	lc := &conn{Conn: c, l: l, source: sourceOf(c.RemoteAddr())}
	if _, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		lc.remote = c.RemoteAddr().String()
	}
	var victim *conn
	l.mu.Lock()
	switch {
	case lc.source != "" && l.sources[lc.source] != nil && l.sources[lc.source].Len() >= l.cfg.MaxSilentPerSource:
		victim = l.sources[lc.source].Front().Value.(*conn)
	case l.held >= l.cfg.Max:
		victim = l.evictableLocked()
		if victim == nil {
			l.mu.Unlock()
			l.report(Refused)
			_ = c.Close()
			return nil
		}
	}
	if victim != nil {
		victim.byLimit = true
		l.dropLocked(victim)
	}
	l.held++
	l.accepted++
	lc.seq = l.accepted
	lc.elem = l.silentOf(lc.source).PushBack(lc)
	if lc.remote != "" {
		l.byRemote[lc.remote] = lc
	}
	if l.cfg.SilentTimeout > 0 {
		lc.timer = time.AfterFunc(l.cfg.SilentTimeout, lc.expire)
	}
	l.mu.Unlock()
	if victim != nil {
		l.report(Evicted)
		_ = victim.Conn.Close()
	}
	return lc
}

// evictableLocked is the oldest silent connection of the source with the most, ties to the oldest; nil when
// none is silent. The scan is over the sources with silent connections, at most Max of them.
func (l *Listener) evictableLocked() *conn {
	var best *conn
	bestN := 0
	for _, s := range l.sources {
		oldest := s.Front().Value.(*conn)
		if s.Len() > bestN || (s.Len() == bestN && oldest.seq < best.seq) {
			best, bestN = oldest, s.Len()
		}
	}
	return best
}

func (l *Listener) silentOf(source string) *list.List {
	s := l.sources[source]
	if s == nil {
		s = list.New()
		l.sources[source] = s
	}
	return s
}

// dropLocked gives up c's place.
func (l *Listener) dropLocked(c *conn) {
	if c.state == dropped {
		return
	}
	if c.state == silent {
		l.unsilenceLocked(c)
	}
	if c.remote != "" && l.byRemote[c.remote] == c {
		delete(l.byRemote, c.remote)
	}
	c.state = dropped
	l.held--
}

func (l *Listener) unsilenceLocked(c *conn) {
	s := l.sources[c.source]
	s.Remove(c.elem)
	c.elem = nil
	if s.Len() == 0 {
		delete(l.sources, c.source)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

func (l *Listener) report(r Reason) {
	if l.cfg.Closed != nil {
		l.cfg.Closed(r)
	}
}

func (c *conn) expire() {
	l := c.l
	l.mu.Lock()
	if c.state != silent {
		l.mu.Unlock()
		return
	}
	c.byLimit = true
	l.dropLocked(c)
	l.mu.Unlock()
	l.report(TimedOut)
	_ = c.Conn.Close()
}

func (c *conn) prove() {
	if c.isProved.Load() {
		return
	}
	l := c.l
	l.mu.Lock()
	if c.state == silent {
		l.unsilenceLocked(c)
		c.state = proved
	}
	c.isProved.Store(true)
	l.mu.Unlock()
}

// Close closes the connection and gives its place to the next.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return err
}

// sourceOf is a TCP connection's remote IP (IPv6: its /64, what one host usually gets); "" when unknown.
func sourceOf(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return ""
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String()
}

// find is the limited connection c is or wraps (through NetConn, as tls.Conn does); nil if none.
func find(c net.Conn) *conn {
	for c != nil {
		if lc, ok := c.(*conn); ok {
			return lc
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = w.NetConn()
	}
	return nil
}

// ProveConn marks c, a connection a Listener accepted or one wrapping it, as proved; false when c is none.
func ProveConn(c net.Conn) bool {
	lc := find(c)
	if lc != nil {
		lc.prove()
	}
	return lc != nil
}

// ClosedByLimit tells whether the limits closed c (evicted or timed out), so that its server does not count the
// error it then reads as the client's.
func ClosedByLimit(c net.Conn) bool {
	lc := find(c)
	if lc == nil {
		return false
	}
	lc.l.mu.Lock()
	defer lc.l.mu.Unlock()
	return lc.byLimit
}

type ctxKey struct{}

// WithConn returns ctx carrying c's limited connection, for Prove; it has the signature of
// http.Server.ConnContext.
func WithConn(ctx context.Context, c net.Conn) context.Context {
	if lc := find(c); lc != nil {
		return context.WithValue(ctx, ctxKey{}, lc)
	}
	return ctx
}

// WithRemote returns ctx carrying l's connection from remote, for servers that see a connection's address but
// not the connection (gRPC's stats handlers); false when l holds none.
func (l *Listener) WithRemote(ctx context.Context, remote net.Addr) (context.Context, bool) {
	if remote == nil {
		return ctx, false
	}
	l.mu.Lock()
	lc := l.byRemote[remote.String()]
	l.mu.Unlock()
	if lc == nil {
		return ctx, false
	}
	return context.WithValue(ctx, ctxKey{}, lc), true
}

// Prove marks the connection ctx carries (WithConn, WithRemote) as proved. It is cheap once it was: servers
// call it on every authenticated request.
func Prove(ctx context.Context) {
	if lc, ok := ctx.Value(ctxKey{}).(*conn); ok {
		lc.prove()
	}
}
