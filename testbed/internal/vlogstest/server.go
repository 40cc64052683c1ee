// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package vlogstest runs a real VictoriaLogs (built by hack/test-servers.sh into the cache) on a free loopback
// port, taking OTLP logs, and queries it with LogsQL over its HTTP API: the tests of the log store recipes find
// records as a user of the store would.
package vlogstest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/vlogstest"

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// Version is the VictoriaLogs release hack/test-servers.sh builds.
const Version = "v1.52.1"

// BinaryPath is where hack/test-servers.sh puts the victoria-logs binary.
func BinaryPath() string { return testproc.CachedBinary("victoria-logs", Version) }

// Binary returns BinaryPath, failing the test with how to get it when it is missing. Under -short it skips t.
func Binary(t testing.TB) string {
	t.Helper()
	return testproc.CachedForTest(t, BinaryPath(), "victorialogs")
}

// Args are the command line of a VictoriaLogs listening on addr (host:port) with its data in dir. The
// retention is the longest it takes: records keep their source's time, which may be weeks old, and VictoriaLogs
// drops what is older than its retention (7 days by default) as it ingests it.
func Args(dir, addr string) []string {
	return []string{
		"-storageDataPath=" + filepath.Join(dir, "data"),
		"-httpListenAddr=" + addr,
		"-retentionPeriod=100y",
		"-loggerLevel=WARN",
	}
}

// Server is one running VictoriaLogs.
type Server struct {
	URL string // http://127.0.0.1:port
	hc  *http.Client
}

// New is a client of the VictoriaLogs at url (http://host:port), for code that did not start it (the demo).
func New(url string) *Server {
	return &Server{URL: url, hc: &http.Client{Timeout: 10 * time.Second}}
}

// OTLPLogsURL is the OTLP/HTTP logs endpoint (protobuf only), the otlp_http exporter's logs_endpoint.
func (s *Server) OTLPLogsURL() string { return s.URL + "/insert/opentelemetry/v1/logs" }

// Start runs VictoriaLogs for t, stopped when t ends (its log shown if t failed), and waits until it is ready.
// Under -short it skips t; without the cached binary it fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s := New("http://" + addr)
	t.Cleanup(s.hc.CloseIdleConnections)
	testproc.StartForTest(t, "victoria-logs", dir, s.Ready, bin, Args(dir, addr)...)
	return s
}

// Ready is VictoriaLogs' health check (/health).
func (s *Server) Ready() error { return testproc.GetOK(s.hc, s.URL+"/health", "") }

// maxLine bounds one returned log entry: the tests' records are a few KiB.
const maxLine = 1 << 20

// Query runs a LogsQL query over every stored time (POST /select/logsql/query) and returns its entries, each
// a field → value map as VictoriaLogs returns them (every value a string). More than limit entries is an
// error, as is an error of VictoriaLogs (a query that does not parse), with its message.
func (s *Server) Query(logsql string, limit int) ([]map[string]string, error) {
	form := url.Values{"query": {logsql}, "limit": {strconv.Itoa(limit + 1)}}
	resp, err := s.hc.PostForm(s.URL+"/select/logsql/query", form)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("query %q: %s: %s", logsql, resp.Status, strings.TrimSpace(string(msg)))
	}
	var out []map[string]string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if len(out) == limit {
			return nil, fmt.Errorf("query %q: more than %d entries", logsql, limit)
		}
		entry := map[string]string{}
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			return nil, fmt.Errorf("query %q: entry %d: %w", logsql, len(out)+1, err)
		}
		out = append(out, entry)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("query %q: %w", logsql, err)
	}
	return out, nil
}
