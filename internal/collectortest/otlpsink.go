// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/collectortest"

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
)

// OTLPSink is an OTLP/HTTP logs endpoint (protobuf, optionally gzip) that keeps what it receives: the backend of
// tests whose collector exports with otlp_http.
type OTLPSink struct {
	URL string // the endpoint for otlp_http, without /v1/logs

	mu   sync.Mutex
	logs []plog.Logs
}

// StartOTLPSink serves a sink on loopback until the test ends.
func StartOTLPSink(t testing.TB) *OTLPSink {
	s := &OTLPSink{}
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
	req := plogotlp.NewExportRequest()
	if err == nil {
		err = req.UnmarshalProto(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.logs = append(s.logs, req.Logs())
	s.mu.Unlock()
	out, _ := plogotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Each calls f for every log record received so far, in arrival order.
func (s *OTLPSink) Each(f func(res pcommon.Resource, lr plog.LogRecord)) {
	s.mu.Lock()
	logs := s.logs
	s.mu.Unlock()
	for _, ld := range logs {
		eachLogRecord(ld, f)
	}
}
