// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// ndjsonListener accepts stream connections and reads one JSON event per line from each. Every connection is
// read by its own goroutine and stops reading while the pipeline refuses its batch, so a slow or refused
// producer blocks only itself. A connection holds at most a line (max_line_bytes), a read buffer and a batch
// (max_batch_bytes), and a listener at most max_connections connections, those that have not sent a complete
// line giving way to new ones (connections.go).
type ndjsonListener struct {
	r       *decisionsReceiver
	cfg     *NDJSONConfig
	ln      net.Listener
	sock    *unixSocket
	decode  decode.Func
	obs     *receiverhelper.ObsReport
	limiter logLimiter

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// readBufferSize is each connection's read buffer. Longer lines are read through it in pieces.
const readBufferSize = 64 << 10

func (r *decisionsReceiver) listen(cfg *NDJSONConfig) (*ndjsonListener, error) {
	l := &ndjsonListener{r: r, cfg: cfg, conns: map[net.Conn]struct{}{}}
	switch cfg.Format {
	case FormatOPA:
		l.decode = decode.OPA
	case FormatGatekeeper:
		l.decode = decode.Gatekeeper
	case FormatGeneric:
		l.decode = decode.NewGeneric(r.cfg.Generic)
	default:
		l.decode = decode.Auto
	}
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: cfg.Transport, ReceiverCreateSettings: r.set,
	})
	if err != nil {
		return nil, err
	}
	l.obs = obs
	var tlsCfg *tls.Config
	if t := cfg.TLS.Get(); t != nil {
		if tlsCfg, err = t.LoadTLSConfig(context.Background()); err != nil {
			return nil, fmt.Errorf("ndjson listener %s: tls: %w", cfg.name(), err)
		}
	}
	if cfg.Transport == "unix" {
		l.ln, l.sock, err = listenUnix(cfg)
	} else {
		l.ln, err = net.Listen("tcp", cfg.Endpoint)
	}
	if err != nil {
		return nil, fmt.Errorf("ndjson listener %s: %w", cfg.name(), err)
	}
	// The limits see the connections before TLS: a handshake that never ends is a silent connection too.
	l.ln = r.limitConnections(l.ln, cfg.name(), &l.limiter, connectionLimits{max: cfg.MaxConnections,
		maxSilentPerSource: cfg.MaxSilentConnectionsPerSource, firstTimeout: cfg.FirstLineTimeout,
		timeoutReason: "first_line_timeout"})
	if tlsCfg != nil {
		l.ln = tls.NewListener(l.ln, tlsCfg)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		l.accept()
	}()
	return l, nil
}

func (l *ndjsonListener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: pause rather than spin.
			l.r.set.Logger.Warn("Accepting a decision stream connection failed", zap.String("listener", l.cfg.name()), zap.Error(err))
			time.Sleep(100 * time.Millisecond)
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		l.r.wg.Add(1)
		go func() {
			defer l.r.wg.Done()
			l.serve(c)
		}()
	}
}

func (l *ndjsonListener) close() error {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	err := l.ln.Close()
	if l.sock != nil {
		l.sock.release()
	}
	return err
}

// serve reads one connection until it ends. Delivery: a batch is handed to the pipeline when the connection
// has no more data buffered or the batch is full, and the next line is read only once it was accepted. If
// the collector dies, the lines of the batch in hand (at most max_batch_records) and what the kernel buffered
// are lost; the producer cannot know which, so stream producers that need more keep their own spool.
func (l *ndjsonListener) serve(c net.Conn) {
	ctx := context.Background()
	l.r.telemetry.ReceiverDecisionLogsConnections.Add(ctx, 1)
	defer func() {
		l.r.telemetry.ReceiverDecisionLogsConnections.Add(ctx, -1)
		c.Close()
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
	}()
	if tc, ok := c.(*tls.Conn); ok && !l.handshake(tc) {
		return
	}
	dc := &deadlineConn{Conn: c, idle: l.cfg.IdleTimeout, line: l.cfg.LineTimeout}
	br := bufio.NewReaderSize(dc, readBufferSize)
	var b batch
	var lines arena
	lineNo := 0
	proved := false
	for {
		dc.nextLine(br.Buffered())
		line, tooLong, err := readLine(br, l.cfg.MaxLineBytes, &lines)
		if err == nil && !proved {
			// A complete line: a producer, whose connection keeps its place when the listener is full.
			proved = connlimit.ProveConn(c)
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			// What arrived of the line is dropped: it is no event.
			l.timedOut(dc, lineNo+1)
		case tooLong:
			lineNo++
			l.r.rejected(&l.limiter, l.cfg.name(), "line_too_long", 1, zap.Int("line", lineNo), zap.Int("max_line_bytes", l.cfg.MaxLineBytes))
		default:
			if line = bytes.TrimSpace(line); len(line) > 0 {
				lineNo++
				if ev, cost, ok := l.decodeLine(line, lineNo); ok {
					if !b.fits(l.r.cfg, cost) {
						if !l.flush(&b, &lines, dc) {
							return
						}
					}
					b.add(ev, cost)
				}
			}
		}
		if len(b.events) > 0 && (len(b.events) >= l.r.cfg.MaxBatchRecords || br.Buffered() == 0 || err != nil) {
			if !l.flush(&b, &lines, dc) {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				l.r.set.Logger.Debug("Decision stream connection ended", zap.String("listener", l.cfg.name()), zap.Error(err))
			}
			return
		}
	}
}

// handshake completes a TLS handshake within handshake_timeout, so that a client that never finishes one
// does not keep its connection.
func (l *ndjsonListener) handshake(tc *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(l.r.stopping, l.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		// A connection the limits closed is counted by them.
		if l.r.stopping.Err() == nil && !connlimit.ClosedByLimit(tc.NetConn()) {
			l.r.rejected(&l.limiter, l.cfg.name(), "tls_handshake", 1, zap.Error(err))
		}
		return false
	}
	return true
}

// timedOut counts a connection closed by line_timeout (in the middle of line lineNo) or idle_timeout.
func (l *ndjsonListener) timedOut(dc *deadlineConn, lineNo int) {
	if dc.inLine() {
		l.r.rejected(&l.limiter, l.cfg.name(), "line_timeout", 1, zap.Int("line", lineNo), zap.Duration("line_timeout", l.cfg.LineTimeout))
		return
	}
	l.r.rejected(&l.limiter, l.cfg.name(), "idle_timeout", 1, zap.Duration("idle_timeout", l.cfg.IdleTimeout))
}

func (l *ndjsonListener) decodeLine(line []byte, lineNo int) (decode.Event, int, bool) {
	return l.r.decodeLine(l.decode, l.cfg.name(), &l.limiter, line, lineNo)
}

// decodeLine decodes and prices one line of a stream or file; false when it is counted as rejected instead.
// The line's bytes are part of its price: the batch holds them until it is handed over.
func (r *decisionsReceiver) decodeLine(decodeEvent decode.Func, listener string, lim *logLimiter, line []byte, lineNo int) (decode.Event, int, bool) {
	ev, err := decodeEvent(line)
	if errors.Is(err, decode.ErrNotDecision) {
		// Gatekeeper's audit_started lines, or JSON that is no decision at all: counted apart from
		// malformed events, and not logged, since a shared stream may carry them routinely.
		r.notDecision(listener)
		return decode.Event{}, 0, false
	}
	if err != nil {
		r.rejected(lim, listener, "event", 1, zap.Int("line", lineNo), zap.Error(err))
		return decode.Event{}, 0, false
	}
	cost, err := r.price(&ev)
	if err != nil {
		r.rejected(lim, listener, "event_too_large", 1, zap.Int("line", lineNo), zap.Error(err))
		return decode.Event{}, 0, false
	}
	return ev, cost + len(line), true
}

func (r *decisionsReceiver) notDecision(listener string) {
	r.telemetry.ReceiverDecisionLogsRejected.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("listener", listener), attribute.String("reason", "not_decision")))
}

// deadlineConn sets a read deadline before each read: idle_timeout from now between lines, line_timeout from
// the arrival of a line's first byte within one.
type deadlineConn struct {
	net.Conn
	idle, line time.Duration
	// lineStart is when the line being read began to arrive; zero between lines.
	lineStart time.Time
	// lastRead is when the last read returned data.
	lastRead time.Time
}

// nextLine is called before each line is read, with what the reader holds of it already: bytes that arrived
// with the last read.
func (d *deadlineConn) nextLine(buffered int) {
	if buffered == 0 {
		d.lineStart = time.Time{}
	} else {
		d.lineStart = d.lastRead
	}
}

// resume restarts the line's clock after the connection was not read for a while (back-pressure): the
// producer's time to send the rest starts when the collector reads again.
func (d *deadlineConn) resume() {
	d.lastRead = time.Now()
	if !d.lineStart.IsZero() {
		d.lineStart = d.lastRead
	}
}

func (d *deadlineConn) inLine() bool { return !d.lineStart.IsZero() }

func (d *deadlineConn) Read(p []byte) (int, error) {
	now := time.Now()
	deadline := now.Add(d.idle)
	if d.inLine() {
		deadline = d.lineStart.Add(d.line)
	}
	if err := d.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	n, err := d.Conn.Read(p)
	if n > 0 {
		d.lastRead = time.Now()
		if d.lineStart.IsZero() {
			d.lineStart = d.lastRead
		}
	}
	return n, err
}

// flush hands the batch to the pipeline, retrying while it refuses, and empties it with the lines it held;
// false when the receiver stops first.
func (l *ndjsonListener) flush(b *batch, lines *arena, dc *deadlineConn) bool {
	if !l.deliver(b.events) {
		return false
	}
	b.reset()
	lines.reset()
	dc.resume()
	return true
}

func (l *ndjsonListener) deliver(batch []decode.Event) bool {
	return l.r.deliver(l.obs, l.cfg.Format, l.cfg.name(), &l.limiter, batch)
}

// arena holds the lines of the batch in hand: the decoded events point into them until the batch is accepted,
// and copying lines into large chunks costs far fewer allocations than one per line.
type arena struct {
	chunk []byte
}

const arenaChunk = 256 << 10

func (a *arena) copy(b []byte) []byte {
	if len(b) > arenaChunk/4 {
		return append([]byte(nil), b...)
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		// Earlier lines keep the previous chunk alive through their slices; it is not reused.
		a.chunk = make([]byte, 0, arenaChunk)
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[start:len(a.chunk):len(a.chunk)]
}

// reset starts a new chunk once the batch that pointed into the old one was handed over.
func (a *arena) reset() { a.chunk = nil }

// readLine returns the next line without its newline, copied into lines so that it outlives the reader's
// buffer. A line longer than max is consumed and reported as too long rather than returned.
func readLine(br *bufio.Reader, maxLen int, lines *arena) ([]byte, bool, error) {
	frag, err := br.ReadSlice('\n')
	if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
		// The whole line was in the buffer: the common case.
		if len(frag) > maxLen+1 { // +1: the newline does not count
			return nil, true, err
		}
		return lines.copy(bytes.TrimSuffix(frag, []byte{'\n'})), false, err
	}
	line := append([]byte(nil), frag...)
	tooLong := len(line) > maxLen+1
	for errors.Is(err, bufio.ErrBufferFull) {
		frag, err = br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > maxLen+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
	}
	if tooLong {
		return nil, true, err
	}
	return bytes.TrimSuffix(line, []byte{'\n'}), false, err
}
