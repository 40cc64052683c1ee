// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package promtest runs a real Prometheus (Debian's package, unpacked into the cache by hack/test-servers.sh) on
// a free loopback port, with its remote write receiver on and the scrape targets a test gives, and queries it
// over its HTTP API: the tests of the metrics pipeline check what a PromQL user would see.
package promtest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// Version is the Prometheus release hack/test-servers.sh unpacks (Debian bookworm's package).
const Version = "2.42"

// BinaryPath is where hack/test-servers.sh puts the prometheus binary.
func BinaryPath() string { return testproc.CachedBinary("prometheus", Version) }

// PromtoolPath is where hack/test-servers.sh puts promtool.
func PromtoolPath() string { return testproc.CachedBinary("promtool", Version) }

// Binary returns BinaryPath, failing the test with how to get it when it is missing. Under -short it skips t.
func Binary(t testing.TB) string {
	t.Helper()
	return testproc.CachedForTest(t, BinaryPath(), "prometheus")
}

// Promtool returns PromtoolPath, failing the test with how to get it when it is missing. Under -short it skips t.
func Promtool(t testing.TB) string {
	t.Helper()
	return testproc.CachedForTest(t, PromtoolPath(), "prometheus")
}

// Target is one scrape job: Prometheus scrapes http://Address/metrics.
type Target struct {
	Job     string
	Address string // host:port
}

// Options of a Prometheus server.
type Options struct {
	// Targets are scraped every Interval.
	Targets []Target
	// RuleFiles are loaded as recording and alerting rules, evaluated every Interval.
	RuleFiles []string
	// Interval is the scrape and rule evaluation interval; 0 means 1s.
	Interval time.Duration
}

// Config is the prometheus.yml of opts.
func Config(opts Options) string {
	interval := opts.Interval
	if interval == 0 {
		interval = time.Second
	}
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", interval, interval)
	if len(opts.RuleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for _, f := range opts.RuleFiles {
			fmt.Fprintf(&b, "  - %q\n", f)
		}
	}
	b.WriteString("scrape_configs:\n")
	if len(opts.Targets) == 0 {
		b.WriteString("  []\n")
	}
	for _, tg := range opts.Targets {
		fmt.Fprintf(&b, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", tg.Job, tg.Address)
	}
	return b.String()
}

// Args are the command line of a Prometheus listening on addr (host:port) with its configuration file and its
// storage in dir, accepting remote write on /api/v1/write.
func Args(dir, addr string) []string {
	return []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--web.enable-remote-write-receiver",
	}
}

// Server is one running Prometheus.
type Server struct {
	URL string // http://127.0.0.1:port
	hc  *http.Client
}

// New is a client of the Prometheus at url (http://host:port), for code that did not start it (the demo).
func New(url string) *Server {
	return &Server{URL: url, hc: &http.Client{Timeout: 10 * time.Second}}
}

// RemoteWriteURL is the endpoint of the remote write receiver.
func (s *Server) RemoteWriteURL() string { return s.URL + "/api/v1/write" }

// Start runs Prometheus with opts for t, stopped when t ends (its log shown if t failed), and waits until it is
// ready. Under -short it skips t; without the cached binary it fails t.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(Config(opts)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s := New("http://" + addr)
	t.Cleanup(s.hc.CloseIdleConnections)
	testproc.StartForTest(t, "prometheus", dir, s.Ready, bin, Args(dir, addr)...)
	return s
}

// Ready is Prometheus's readiness check (/-/ready).
func (s *Server) Ready() error { return testproc.GetOK(s.hc, s.URL+"/-/ready", "") }

// Sample is one series of an instant vector: its labels (__name__ included) and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// String is the series as PromQL writes it, labels sorted: name{a="1",b="2"} value.
func (s Sample) String() string {
	names := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		if k != "__name__" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%q", k, s.Labels[k]))
	}
	return fmt.Sprintf("%s{%s} %v", s.Labels["__name__"], strings.Join(parts, ","), s.Value)
}

// Query evaluates promql at the current time (GET /api/v1/query) and returns the instant vector's samples;
// a scalar is returned as one sample without labels. An error of Prometheus (a parse error) is an error.
func (s *Server) Query(promql string) ([]Sample, error) {
	resp, err := s.hc.Get(s.URL + "/api/v1/query?" + url.Values{"query": {promql}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", promql, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", promql, body.ErrorType, body.Error)
	}
	switch body.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(body.Data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(vec))
		for _, v := range vec {
			f, err := parseValue(v.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Labels: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(body.Data.Result, &sc); err != nil {
			return nil, err
		}
		f, err := parseValue(sc[1])
		return []Sample{{Labels: map[string]string{}, Value: f}}, err
	default:
		return nil, fmt.Errorf("query %q: result type %s, want a vector or scalar", promql, body.Data.ResultType)
	}
}

// parseValue reads a sample value, which the API sends as a string ("1", "NaN", "+Inf").
func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}

// Value evaluates promql, which must return exactly one sample, and returns its value.
func (s *Server) Value(promql string) (float64, error) {
	samples, err := s.Query(promql)
	if err != nil {
		return 0, err
	}
	if len(samples) != 1 {
		return 0, fmt.Errorf("query %q returned %d samples, want 1: %v", promql, len(samples), samples)
	}
	return samples[0].Value, nil
}

// Alert is one alert of GET /api/v1/alerts: its labels (alertname included), its state (pending or firing) and
// its annotations.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// Alerts returns the alerts Prometheus holds now, pending and firing (GET /api/v1/alerts).
func (s *Server) Alerts() ([]Alert, error) {
	resp, err := s.hc.Get(s.URL + "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("alerts: %s: %w", resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("alerts: %s", body.Error)
	}
	return body.Data.Alerts, nil
}
