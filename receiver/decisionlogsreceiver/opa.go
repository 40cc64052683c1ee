// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

const opaListener = "opa"

// opaEndpoint serves what OPA's decision_logs plugin uploads: a JSON array of decision events, usually gzip
// compressed (confighttp decompresses it). It answers 2xx only once the pipeline accepted the events, so OPA
// keeps and retries a chunk the pipeline refused. OPA retries every answer but 2xx, whatever its code.
type opaEndpoint struct {
	r       *decisionsReceiver
	cfg     *OPAConfig
	obs     *receiverhelper.ObsReport
	limiter logLimiter
	bodies  bodyPool
}

func (r *decisionsReceiver) startOPA(ctx context.Context, host component.Host, cfg *OPAConfig) error {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: "http", ReceiverCreateSettings: r.set,
	})
	if err != nil {
		return err
	}
	e := &opaEndpoint{r: r, cfg: cfg, obs: obs}
	e.bodies.limit = int64(cfg.MaxConcurrentRequests) * cfg.ServerConfig.MaxRequestBodySize
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, e.handle)
	ln, err := cfg.ServerConfig.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("opa endpoint: %w", err)
	}
	ln = r.limitConnections(ln, opaListener, &e.limiter, connectionLimits{max: cfg.MaxConnections,
		maxSilentPerSource: cfg.MaxSilentConnectionsPerSource, firstTimeout: cfg.FirstRequestTimeout,
		timeoutReason: "first_request_timeout"})
	srv, err := cfg.ServerConfig.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux)
	if err != nil {
		ln.Close()
		return fmt.Errorf("opa endpoint: %w", err)
	}
	// handle proves a request's connection through its context.
	srv.ConnContext = connlimit.WithConn
	r.server = srv
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	return nil
}

func (e *opaEndpoint) handle(w http.ResponseWriter, req *http.Request) {
	// Through auth, when it is set: the connection is a producer's, and keeps its place when the endpoint is full.
	connlimit.Prove(req.Context())
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "decision logs are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, reserved, err := e.bodies.read(req.Body, e.cfg.ServerConfig.MaxRequestBodySize)
	defer e.bodies.release(reserved)
	if err != nil {
		e.readFailed(w, err)
		return
	}
	events, err := decode.SplitEvents(body, e.cfg.MaxEventsPerRequest)
	if err != nil {
		if errors.Is(err, decode.ErrTooManyEvents) {
			e.r.rejected(&e.limiter, opaListener, "too_many_events", 1, zap.Int("max_events_per_request", e.cfg.MaxEventsPerRequest))
			http.Error(w, fmt.Sprintf("more than %d decision events in one upload", e.cfg.MaxEventsPerRequest), http.StatusRequestEntityTooLarge)
			return
		}
		e.r.rejected(&e.limiter, opaListener, "json", 1, zap.Error(err))
		http.Error(w, "malformed decision log upload: "+err.Error(), http.StatusBadRequest)
		return
	}
	// The events are decoded and delivered a batch at a time, so that the records built from an upload are at
	// most one batch whatever its size; the answer waits for all of them.
	var b batch
	for i := range events {
		ev, err := events[i].Decode(nil)
		if err != nil {
			// One bad event does not cost OPA the rest of its chunk.
			e.r.rejected(&e.limiter, opaListener, "event", 1, zap.Int("event", i), zap.Error(err))
			continue
		}
		cost, err := e.r.price(&ev)
		if err != nil {
			e.r.rejected(&e.limiter, opaListener, "event_too_large", 1, zap.Int("event", i), zap.Error(err))
			continue
		}
		if !b.fits(e.r.cfg, cost) && !e.deliver(w, req, &b) {
			return
		}
		b.add(ev, cost)
	}
	if len(b.events) > 0 && !e.deliver(w, req, &b) {
		return
	}
	w.WriteHeader(http.StatusOK)
}

// readFailed answers a body that could not be read.
func (e *opaEndpoint) readFailed(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, errBodiesFull):
		e.r.rejected(&e.limiter, opaListener, "busy", 1, zap.Int64("held_bytes_limit", e.bodies.limit))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many uploads at once; retry later", http.StatusTooManyRequests)
	case errors.As(err, &tooLarge):
		e.r.rejected(&e.limiter, opaListener, "body_too_large", 1, zap.Int64("limit", tooLarge.Limit))
		http.Error(w, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
	case errors.Is(err, os.ErrDeadlineExceeded):
		e.r.rejected(&e.limiter, opaListener, "timeout", 1, zap.Duration("read_timeout", e.cfg.ServerConfig.ReadTimeout))
		http.Error(w, "the request body did not arrive within read_timeout", http.StatusRequestTimeout)
	default:
		e.r.rejected(&e.limiter, opaListener, "encoding", 1, zap.Error(err))
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
	}
}

// deliver hands the batch to the pipeline and empties it; false when it answered the refusal. An upload
// refused after some of its batches were accepted is uploaded again by OPA whole: those decisions arrive twice,
// with the same IDs.
func (e *opaEndpoint) deliver(w http.ResponseWriter, req *http.Request, b *batch) bool {
	n := len(b.events)
	err := e.r.consume(req.Context(), e.obs, FormatOPA, b.events)
	b.reset()
	if err == nil {
		return true
	}
	if consumererror.IsPermanent(err) {
		e.r.rejected(&e.limiter, opaListener, "refused", n, zap.Error(err))
		http.Error(w, "the pipeline rejected the decisions: "+err.Error(), http.StatusBadRequest)
		return false
	}
	w.Header().Set("Retry-After", "5")
	http.Error(w, "the pipeline is refusing data; retry later", http.StatusServiceUnavailable)
	return false
}

// bodyPool holds the memory of the upload bodies read and decoded at once to max_concurrent_requests ×
// max_request_body_size. Memory is reserved before a body's buffer grows, so that a client gets no more than it
// sends: a trickled body holds only the bytes that arrived (and read_timeout ends it), and cannot keep others
// out the way a turn taken before the body is read would.
type bodyPool struct {
	held  atomic.Int64
	limit int64
}

// errBodiesFull is read's answer when the body would take the pool past its limit.
var errBodiesFull = errors.New("the bodies of the uploads being read take max_concurrent_requests × max_request_body_size")

// read reads a body of at most maxLen bytes into a buffer reserved from the pool; the caller releases what it
// reserved once done with the body, also after an error.
func (p *bodyPool) read(r io.Reader, maxLen int64) (body []byte, reserved int64, err error) {
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= maxLen {
				// Full: the body ends here, or is too large (confighttp's MaxBytesReader says so).
				var one [1]byte
				n, err := io.ReadFull(r, one[:])
				if n > 0 {
					return nil, reserved, &http.MaxBytesError{Limit: maxLen}
				}
				if errors.Is(err, io.EOF) {
					return buf, reserved, nil
				}
				return nil, reserved, err
			}
			// Doubling, as append does, but no larger than the body may be.
			grow := min(max(int64(cap(buf)), 4<<10), maxLen-int64(cap(buf)))
			if p.held.Add(grow) > p.limit {
				p.held.Add(-grow)
				return nil, reserved, errBodiesFull
			}
			reserved += grow
			buf = append(make([]byte, 0, int64(cap(buf))+grow), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, reserved, nil
		}
		if err != nil {
			return nil, reserved, err
		}
	}
}

func (p *bodyPool) release(reserved int64) { p.held.Add(-reserved) }
