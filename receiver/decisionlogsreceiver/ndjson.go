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
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// ndjsonListener accepts stream connections and reads one JSON event per line from each. Every connection is
// read by its own goroutine and stops reading while the pipeline refuses its batch, so a slow or refused
// producer blocks only itself, and memory holds at most one batch per connection.
type ndjsonListener struct {
	r       *decisionsReceiver
	cfg     *NDJSONConfig
	ln      net.Listener
	decode  decodeFunc
	obs     *receiverhelper.ObsReport
	limiter logLimiter

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (r *decisionsReceiver) listen(cfg *NDJSONConfig) (*ndjsonListener, error) {
	l := &ndjsonListener{r: r, cfg: cfg, conns: map[net.Conn]struct{}{}}
	switch cfg.Format {
	case FormatOPA:
		l.decode = decodeOPA
	case FormatGatekeeper:
		l.decode = decodeGatekeeper
	case FormatGeneric:
		l.decode = newGenericDecoder(r.cfg.Generic)
	default:
		l.decode = decodeAuto
	}
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: cfg.Transport, ReceiverCreateSettings: r.set,
	})
	if err != nil {
		return nil, err
	}
	l.obs = obs
	if l.ln, err = openListener(cfg); err != nil {
		return nil, err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		l.accept()
	}()
	return l, nil
}

func openListener(cfg *NDJSONConfig) (net.Listener, error) {
	if cfg.Transport == "tcp" {
		ln, err := net.Listen("tcp", cfg.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("ndjson listener %s: %w", cfg.name(), err)
		}
		if tlsCfg := cfg.TLS.Get(); tlsCfg != nil {
			tc, err := tlsCfg.LoadTLSConfig(context.Background())
			if err != nil {
				ln.Close()
				return nil, fmt.Errorf("ndjson listener %s: tls: %w", cfg.name(), err)
			}
			ln = tls.NewListener(ln, tc)
		}
		return ln, nil
	}
	mode, err := cfg.socketMode()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Endpoint), 0o750); err != nil {
		return nil, fmt.Errorf("ndjson listener %s: %w", cfg.name(), err)
	}
	// A socket left behind by a previous run is removed; any other file at the path is not ours to delete.
	if st, err := os.Lstat(cfg.Endpoint); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("ndjson listener %s: %s exists and is not a socket", cfg.name(), cfg.Endpoint)
		}
		if err := os.Remove(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("ndjson listener %s: removing the stale socket: %w", cfg.name(), err)
		}
	}
	ln, err := net.Listen("unix", cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("ndjson listener %s: %w", cfg.name(), err)
	}
	if err := os.Chmod(cfg.Endpoint, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("ndjson listener %s: socket_mode: %w", cfg.name(), err)
	}
	return ln, nil
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
	if l.cfg.Transport == "unix" {
		_ = os.Remove(l.cfg.Endpoint)
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
	br := bufio.NewReaderSize(c, 256<<10)
	batch := make([]decoded, 0, 64)
	var lines arena
	lineNo := 0
	for {
		line, tooLong, err := readLine(br, l.cfg.MaxLineBytes, &lines)
		if tooLong {
			lineNo++
			l.r.rejected(&l.limiter, l.cfg.name(), "line_too_long", 1, zap.Int("line", lineNo), zap.Int("max_line_bytes", l.cfg.MaxLineBytes))
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			lineNo++
			ev, derr := l.decode(line)
			if errors.Is(derr, errNotDecision) {
				// Gatekeeper's audit_started lines, or JSON that is no decision at all: counted apart from
				// malformed events, and not logged, since a shared stream may carry them routinely.
				l.r.telemetry.ReceiverDecisionLogsRejected.Add(context.Background(), 1, metric.WithAttributes(
					attribute.String("listener", l.cfg.name()), attribute.String("reason", "not_decision")))
			} else if derr != nil {
				l.r.rejected(&l.limiter, l.cfg.name(), "event", 1, zap.Int("line", lineNo), zap.Error(derr))
			} else {
				batch = append(batch, ev)
			}
		}
		if len(batch) > 0 && (len(batch) >= l.r.cfg.MaxBatchRecords || br.Buffered() == 0 || err != nil) {
			if !l.flush(batch) {
				return
			}
			batch = batch[:0]
			lines.reset()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				l.r.set.Logger.Debug("Decision stream connection ended", zap.String("listener", l.cfg.name()), zap.Error(err))
			}
			return
		}
	}
}

// flush hands the batch to the pipeline, retrying while it refuses; false when the receiver stops first.
func (l *ndjsonListener) flush(batch []decoded) bool {
	delay := 10 * time.Millisecond
	for {
		err := l.r.consume(l.r.stopping, l.obs, l.cfg.Format, batch)
		if err == nil {
			return true
		}
		if consumererror.IsPermanent(err) {
			l.r.rejected(&l.limiter, l.cfg.name(), "refused", len(batch), zap.Error(err))
			return true
		}
		t := time.NewTimer(delay)
		select {
		case <-l.r.stopping.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
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
