// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// MinTokenLength is the shortest token the server accepts: 32 bytes, 128 bits of randomness as hex (openssl rand
// -hex 16) and more in other alphabets, beyond any guessing through the sign-in rate limit.
const MinTokenLength = 32

// checkToken refuses a token that could be guessed. Its message never holds the token.
func checkToken(t string) error {
	switch {
	case t == "":
		return errors.New("empty token")
	case len(t) < MinTokenLength:
		return fmt.Errorf("token of %d bytes: want at least %d (make one with `openssl rand -hex 32`)", len(t), MinTokenLength)
	}
	return nil
}

// maxFailureSources bounds the source addresses failureLimiter remembers.
const maxFailureSources = 10000

// failureLimiter limits failed authentications per source address: each source has perMinute failures at
// once, given back one every minute/perMinute. A source with none left is refused before its credentials are
// checked, so it learns nothing more until then. IPv6 sources count by /64, what one host usually has.
type failureLimiter struct {
	perMinute int
	now       func() time.Time

	mu      sync.Mutex
	sources map[netip.Prefix]*failureBucket
}

// failureBucket is a source's failures left, as of at.
type failureBucket struct {
	left float64
	at   time.Time
}

func newFailureLimiter(perMinute int, now func() time.Time) *failureLimiter {
	return &failureLimiter{perMinute: perMinute, now: now, sources: map[netip.Prefix]*failureBucket{}}
}

// sourceOf is a request's source address, as the server sees it (a proxy's, behind one).
func sourceOf(r *http.Request) netip.Prefix { return sourcePrefix(r.RemoteAddr) }

// sourcePrefix is the source of a host:port address: the address, or its /64 for IPv6.
func sourcePrefix(hostport string) netip.Prefix {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// leftAt is what b has left at now.
func (l *failureLimiter) leftAt(b *failureBucket, now time.Time) float64 {
	return min(float64(l.perMinute), b.left+now.Sub(b.at).Minutes()*float64(l.perMinute))
}

// refill brings b up to now.
func (l *failureLimiter) refill(b *failureBucket, now time.Time) {
	b.left, b.at = l.leftAt(b, now), now
}

// wait is how long source must wait before it may fail again; 0 when it may try now.
func (l *failureLimiter) wait(source netip.Prefix) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.sources[source]
	if b == nil {
		return 0
	}
	l.refill(b, l.now())
	if b.left >= 1 {
		return 0
	}
	return time.Duration((1 - b.left) / float64(l.perMinute) * float64(time.Minute))
}

// failed takes one failure from source.
func (l *failureLimiter) failed(source netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.sources[source]
	if b == nil {
		if len(l.sources) >= maxFailureSources {
			l.forget(now)
		}
		b = &failureBucket{left: float64(l.perMinute), at: now}
		l.sources[source] = b
	}
	l.refill(b, now)
	b.left = max(0, b.left-1)
}

// forget makes room for a new source: the sources that have all their failures back are forgotten, and when
// none has, the one that failed longest ago.
func (l *failureLimiter) forget(now time.Time) {
	var oldest netip.Prefix
	var oldestAt time.Time
	for p, b := range l.sources {
		if l.leftAt(b, now) >= float64(l.perMinute) {
			delete(l.sources, p)
			continue
		}
		if oldestAt.IsZero() || b.at.Before(oldestAt) {
			oldest, oldestAt = p, b.at
		}
	}
	if len(l.sources) >= maxFailureSources {
		delete(l.sources, oldest)
	}
}

// tooManyFailures answers a request from a source past its failed authentications: 429 with Retry-After.
func (s *Server) tooManyFailures(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	s.metrics.httpAuthRate.Add(1)
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.answerError(w, r, http.StatusTooManyRequests,
		fmt.Sprintf("too many failed sign-ins or wrong tokens from this address: retry in %d s", secs))
}
