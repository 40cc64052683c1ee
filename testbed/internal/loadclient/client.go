// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package loadclient streams uniquely identified items into a collector at a fixed rate, the way the clients
// of a collector deliver: one upload at a time, in order, and the same bytes posted again until the collector
// answers 200 (OPA's decision_logs plugin does this; so does the collector's own otlphttp exporter). An item
// counts as accepted only once its upload was answered 200, so "accepted" is exactly what the collector promised
// not to lose.
package loadclient // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/loadclient"

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Chunk is one upload: the ids of the items it carries and the exact bytes posted.
type Chunk struct {
	IDs  []string
	Body []byte
}

// Encoding builds the chunk of items first..first+n-1 of a run and names the headers its uploads carry.
type Encoding struct {
	Name    string
	Headers map[string]string
	Build   func(runID string, first, n int, ts time.Time) Chunk
}

// Config is one stream.
type Config struct {
	URL       string
	RunID     string // makes the ids of this run unique
	Rate      int    // items per second
	ChunkSize int    // items per upload
	Duration  time.Duration
	Encoding  Encoding
}

// Stats counts what the client saw.
type Stats struct {
	Posts      int64 `json:"posts"`           // HTTP requests attempted
	Retries    int64 `json:"retries"`         // posts of a chunk already posted before
	Refused    int64 `json:"conn_refused"`    // connection refused: the collector was down, nothing was sent
	Ambiguous  int64 `json:"ambiguous_error"` // other transport errors: the upload may have been taken
	Status503  int64 `json:"status_503"`      // the pipeline refused (back-pressure)
	OtherError int64 `json:"other_status"`    // any other non-200 answer
}

// Client is one stream's uploader.
type Client struct {
	cfg    Config
	chunks int

	hc *http.Client

	posts, retries, refused, ambiguous, s503, other atomic.Int64
	first503                                        atomic.Int64 // unix nanoseconds of the first 503, 0 before

	mu       sync.Mutex
	accepted []string // ids of uploads answered 200, in order
	err      error    // set when the upload loop gave up (context ended)
}

// New returns a client for cfg; Run starts it.
func New(cfg Config) *Client {
	n := int(cfg.Duration.Seconds() * float64(cfg.Rate) / float64(cfg.ChunkSize))
	return &Client{
		cfg: cfg, chunks: max(n, 1),
		hc: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}},
	}
}

// Generated is the number of items the stream generates.
func (c *Client) Generated() int { return c.chunks * c.cfg.ChunkSize }

// Run generates chunks at the fixed rate and uploads them until every chunk was accepted or ctx ends. It
// closes done when it returns.
func (c *Client) Run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	// The queue holds the whole stream, as OPA's buffer or an exporter's queue holds what could not be sent:
	// the client never drops, so whatever is lost was lost by the collector.
	queue := make(chan Chunk, c.chunks)
	go func() {
		interval := time.Duration(float64(time.Second) * float64(c.cfg.ChunkSize) / float64(c.cfg.Rate))
		tick := time.NewTicker(interval)
		defer tick.Stop()
		defer close(queue)
		for i := range c.chunks {
			queue <- c.cfg.Encoding.Build(c.cfg.RunID, i*c.cfg.ChunkSize, c.cfg.ChunkSize, time.Now())
			if i == c.chunks-1 {
				break
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer c.hc.CloseIdleConnections()
	for ch := range queue {
		if err := c.upload(ctx, ch); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
	}
}

// upload posts ch until the collector answers 200, backing off from 50ms to 500ms between attempts.
func (c *Client) upload(ctx context.Context, ch Chunk) error {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			c.retries.Add(1)
		}
		c.posts.Add(1)
		if c.post(ctx, ch) {
			c.mu.Lock()
			c.accepted = append(c.accepted, ch.IDs...)
			c.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up on chunk %s…: %w", ch.IDs[0], ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (c *Client) post(ctx context.Context, ch Chunk) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(ch.Body))
	if err != nil {
		panic(err)
	}
	for k, v := range c.cfg.Encoding.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			c.refused.Add(1)
		} else {
			c.ambiguous.Add(1)
		}
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusServiceUnavailable:
		c.first503.CompareAndSwap(0, time.Now().UnixNano())
		c.s503.Add(1)
	default:
		c.other.Add(1)
	}
	return false
}

// AcceptedIDs returns a copy of the accepted ids.
func (c *Client) AcceptedIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.accepted...)
}

// AcceptedCount is the number of accepted ids.
func (c *Client) AcceptedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.accepted)
}

// Failure is why Run gave up, or nil.
func (c *Client) Failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// First503 is when the collector first pushed back with 503, or the zero time.
func (c *Client) First503() time.Time {
	if n := c.first503.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Stats returns the counts so far.
func (c *Client) Stats() Stats {
	return Stats{
		Posts: c.posts.Load(), Retries: c.retries.Load(), Refused: c.refused.Load(), Ambiguous: c.ambiguous.Load(),
		Status503: c.s503.Load(), OtherError: c.other.Load(),
	}
}

// NewRunID returns a random id that makes a run's item ids unique across runs against the same backend.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
