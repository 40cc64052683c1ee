package crash

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// chunk is one OPA upload: a gzip JSON array of decision events with unique decision ids. Like OPA's
// decision_logs plugin, the client keeps the chunk's bytes and sends exactly them again until the collector
// answers 200.
type chunk struct {
	ids  []string
	body []byte
}

// opaEvent is a decision event as OPA's decision_logs plugin uploads it (AdmissionReview input, denied).
func opaEvent(id string, seq int, ts time.Time) string {
	return fmt.Sprintf(`{"decision_id":%q,"path":"kubernetes/admission","result":{"allowed":false},`+
		`"input":{"kind":"AdmissionReview","request":{"uid":"u-%d","operation":"CREATE","kind":{"group":"","version":"v1","kind":"Namespace"},`+
		`"name":"ns-%d","userInfo":{"username":"system:serviceaccount:ci:deployer"}}},`+
		`"timestamp":%q,"labels":{"id":"opa-crash","version":"1.22.2"},"requested_by":"10.0.0.1:4242"}`,
		id, seq, seq, ts.UTC().Format(time.RFC3339Nano))
}

func newChunk(runID string, first, n int, ts time.Time) chunk {
	c := chunk{ids: make([]string, 0, n)}
	events := make([]string, 0, n)
	for i := first; i < first+n; i++ {
		id := fmt.Sprintf("%s-%08d", runID, i)
		c.ids = append(c.ids, id)
		events = append(events, opaEvent(id, i, ts))
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("[" + strings.Join(events, ",") + "]"))
	_ = w.Close()
	c.body = gz.Bytes()
	return c
}

// clientStats counts what the OPA-like client saw.
type clientStats struct {
	Posts      int64 `json:"posts"`           // HTTP requests attempted
	Retries    int64 `json:"retries"`         // posts of a chunk already posted before
	Refused    int64 `json:"conn_refused"`    // connection refused: the collector was down, nothing was sent
	Ambiguous  int64 `json:"ambiguous_error"` // other transport errors: the upload may have been taken
	Status503  int64 `json:"status_503"`      // the pipeline refused
	OtherError int64 `json:"other_status"`    // any other non-200 answer
}

// opaClient streams decisions at a fixed rate and uploads them one chunk at a time, in order, as OPA does.
type opaClient struct {
	url       string
	runID     string
	rate      int // decisions per second
	chunkSize int
	chunks    int // chunks to generate

	hc *http.Client

	posts, retries, refused, ambiguous, s503, other atomic.Int64

	mu       sync.Mutex
	accepted []string // ids of uploads answered 200, in order
	err      error    // set when the upload loop gave up (context ended)
}

func newOPAClient(url, runID string, rate, chunkSize int, duration time.Duration) *opaClient {
	n := int(duration.Seconds() * float64(rate) / float64(chunkSize))
	if n < 1 {
		n = 1
	}
	return &opaClient{
		url: url, runID: runID, rate: rate, chunkSize: chunkSize, chunks: n,
		hc: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}},
	}
}

// run generates chunks at the fixed rate and uploads them until every chunk was accepted or ctx ends. It
// closes done when it returns.
func (c *opaClient) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	queue := make(chan chunk, c.chunks) // holds the whole stream, as OPA's buffer holds what it could not send
	go func() {
		interval := time.Duration(float64(time.Second) * float64(c.chunkSize) / float64(c.rate))
		tick := time.NewTicker(interval)
		defer tick.Stop()
		defer close(queue)
		for i := range c.chunks {
			queue <- newChunk(c.runID, i*c.chunkSize, c.chunkSize, time.Now())
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
func (c *opaClient) upload(ctx context.Context, ch chunk) error {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			c.retries.Add(1)
		}
		c.posts.Add(1)
		ok := c.post(ctx, ch)
		if ok {
			c.mu.Lock()
			c.accepted = append(c.accepted, ch.ids...)
			c.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up on chunk %s…: %w", ch.ids[0], ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (c *opaClient) post(ctx context.Context, ch chunk) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(ch.body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
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
		c.s503.Add(1)
	default:
		c.other.Add(1)
	}
	return false
}

// acceptedIDs returns a copy of the accepted ids.
func (c *opaClient) acceptedIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.accepted...)
}

func (c *opaClient) acceptedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.accepted)
}

func (c *opaClient) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *opaClient) stats() clientStats {
	return clientStats{
		Posts: c.posts.Load(), Retries: c.retries.Load(), Refused: c.refused.Load(), Ambiguous: c.ambiguous.Load(),
		Status503: c.s503.Load(), OtherError: c.other.Load(),
	}
}
