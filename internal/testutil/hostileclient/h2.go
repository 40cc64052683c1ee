// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostileclient

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Outcome is how the server ended a stream of a Conn: with a RST_STREAM (Reset, e.g. REFUSED_STREAM when the
// connection has its maximum of concurrent streams), or with trailers carrying a gRPC status (Reset false),
// which a RST_STREAM NO_ERROR may follow, not reported.
type Outcome struct {
	StreamID   uint32
	Reset      bool
	Code       http2.ErrCode
	GRPCStatus string // "16" is UNAUTHENTICATED
}

// Conn is a raw HTTP/2 connection to a gRPC server that opens streams as a hostile client would: as many as
// it likes, whatever the server's SETTINGS_MAX_CONCURRENT_STREAMS, each sending the start of a message and no
// more.
type Conn struct {
	conn      net.Conn
	authority string

	mu     sync.Mutex // guards the writes of fr, enc and next
	fr     *http2.Framer
	hbuf   bytes.Buffer
	enc    *hpack.Encoder
	next   uint32
	closed chan struct{}

	outcomes chan Outcome
	readErr  error // set before outcomes is closed
}

// Dial connects to a plaintext gRPC server and sends the client preface. Outcomes has room for maxOutcomes
// stream ends; further ones block the reader, as a client that stops reading does.
func Dial(addr string, maxOutcomes int) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := &Conn{conn: nc, authority: addr, next: 1, closed: make(chan struct{}), outcomes: make(chan Outcome, maxOutcomes)}
	c.fr = http2.NewFramer(nc, nc)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	if _, err := nc.Write([]byte(http2.ClientPreface)); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.fr.WriteSettings(); err != nil {
		nc.Close()
		return nil, err
	}
	go c.read()
	return c, nil
}

// OpenStream starts a Forward call with the authorization header (none when empty) and sends the first
// len(data) bytes of a message that declares declared bytes; the stream stays open. data must fit the
// server's stream window (64 KiB).
func (c *Conn) OpenStream(authorization string, declared uint32, data []byte) (uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next += 2
	c.hbuf.Reset()
	fields := [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", ForwardMethod},
		{":authority", c.authority}, {"content-type", "application/grpc"}, {"te", "trailers"}}
	if authorization != "" {
		fields = append(fields, [2]string{"authorization", authorization})
	}
	for _, f := range fields {
		if err := c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return 0, err
		}
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true}); err != nil {
		return 0, err
	}
	msg := make([]byte, 5, 5+len(data))
	binary.BigEndian.PutUint32(msg[1:], declared)
	msg = append(msg, data...)
	for len(msg) > 0 {
		n := min(len(msg), 16384) // the default SETTINGS_MAX_FRAME_SIZE
		if err := c.fr.WriteData(id, false, msg[:n]); err != nil {
			return 0, err
		}
		msg = msg[n:]
	}
	return id, nil
}

// Outcomes delivers the end of every stream the server ended; it is closed when the connection ends.
func (c *Conn) Outcomes() <-chan Outcome { return c.outcomes }

// Err is why the connection ended, once Outcomes is closed.
func (c *Conn) Err() error { return c.readErr }

// Close closes the connection.
func (c *Conn) Close() error {
	select {
	case <-c.closed:
		return nil
	default:
		close(c.closed)
	}
	return c.conn.Close()
}

// read answers the server's SETTINGS and PINGs, as a live client does, and reports ended streams.
func (c *Conn) read() {
	defer close(c.outcomes)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			select {
			case <-c.closed:
				c.readErr = net.ErrClosed
			default:
				c.readErr = err
			}
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		case *http2.RSTStreamFrame:
			// NO_ERROR follows a complete answer (trailers) to a client still sending: "stop sending".
			if f.ErrCode != http2.ErrCodeNo {
				c.outcomes <- Outcome{StreamID: f.StreamID, Reset: true, Code: f.ErrCode}
			}
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st != "" && st != "200" {
				err = fmt.Errorf("stream %d: HTTP status %s", f.StreamID, st)
			} else if gs := grpcStatus(f); gs != "" {
				c.outcomes <- Outcome{StreamID: f.StreamID, GRPCStatus: gs}
			}
		case *http2.GoAwayFrame:
			err = fmt.Errorf("GOAWAY %v: %s", f.ErrCode, f.DebugData())
		}
		if err != nil {
			c.readErr = err
			c.conn.Close()
			return
		}
	}
}

func grpcStatus(f *http2.MetaHeadersFrame) string {
	for _, hf := range f.RegularFields() {
		if strings.EqualFold(hf.Name, "grpc-status") {
			return hf.Value
		}
	}
	return ""
}

func (c *Conn) write(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f()
}

// ErrNoOutcome is returned by Wait when the connection ended before n streams did.
var ErrNoOutcome = errors.New("hostileclient: the connection ended first")

// Wait returns the next n outcomes, or fails after timeout or when the connection ends first.
func (c *Conn) Wait(n int, timeout time.Duration) ([]Outcome, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	out := make([]Outcome, 0, n)
	for len(out) < n {
		select {
		case o, ok := <-c.outcomes:
			if !ok {
				return out, fmt.Errorf("%w after %d of %d outcomes: %w", ErrNoOutcome, len(out), n, c.readErr)
			}
			out = append(out, o)
		case <-timer.C:
			return out, fmt.Errorf("hostileclient: %d of %d outcomes after %v", len(out), n, timeout)
		}
	}
	return out, nil
}
