// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// OTLPSink is an OTLP/HTTP logs and metrics endpoint (protobuf, optionally gzip) that keeps what it receives:
// the backend of tests whose collector exports with otlp_http.
type OTLPSink struct {
	URL string // the endpoint for otlp_http, without /v1/logs

	mu      sync.Mutex
	logs    []plog.Logs
	metrics []pmetric.Metrics
	// onLogs and onMetrics, when set, take each request's data instead of the sink, with mu held.
	onLogs    func(plog.Logs)
	onMetrics func(pmetric.Metrics)
}

// StartOTLPSink serves a sink on loopback until the test ends.
func StartOTLPSink(t testing.TB) *OTLPSink { return (&OTLPSink{}).serve(t) }

// StartOTLPFunc serves a sink that hands every request's logs and metrics to the functions, one request at a
// time, instead of keeping them (Each and Metrics do not see them): for tests that tally more records than they
// could keep. A nil function leaves that signal kept.
func StartOTLPFunc(t testing.TB, logs func(plog.Logs), metrics func(pmetric.Metrics)) *OTLPSink {
	return (&OTLPSink{onLogs: logs, onMetrics: metrics}).serve(t)
}

func (s *OTLPSink) serve(t testing.TB) *OTLPSink {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *OTLPSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in = gz
	}
	body, err := io.ReadAll(in)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req interface{ UnmarshalProto([]byte) error }
	var resp interface{ MarshalProto() ([]byte, error) }
	var keep func()
	if r.URL.Path == "/v1/metrics" {
		m := pmetricotlp.NewExportRequest()
		req, resp, keep = m, pmetricotlp.NewExportResponse(), func() { s.keepMetrics(m.Metrics()) }
	} else {
		l := plogotlp.NewExportRequest()
		req, resp, keep = l, plogotlp.NewExportResponse(), func() { s.keepLogs(l.Logs()) }
	}
	if err := req.UnmarshalProto(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	keep()
	s.mu.Unlock()
	out, _ := resp.MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *OTLPSink) keepLogs(ld plog.Logs) {
	if s.onLogs != nil {
		s.onLogs(ld)
		return
	}
	s.logs = append(s.logs, ld)
}

func (s *OTLPSink) keepMetrics(md pmetric.Metrics) {
	if s.onMetrics != nil {
		s.onMetrics(md)
		return
	}
	s.metrics = append(s.metrics, md)
}

// Metrics are the metrics received so far, in arrival order.
func (s *OTLPSink) Metrics() []pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pmetric.Metrics(nil), s.metrics...)
}

// Each calls f for every log record received so far, in arrival order.
func (s *OTLPSink) Each(f func(res pcommon.Resource, lr plog.LogRecord)) {
	s.mu.Lock()
	logs := s.logs
	s.mu.Unlock()
	for _, ld := range logs {
		EachLogRecord(ld, f)
	}
}
