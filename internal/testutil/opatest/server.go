// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package opatest runs a real OPA server (the one hack/test-servers.sh installs) whose decision_logs plugin
// uploads to a collector, for integration tests of the decision_logs receiver and of the distribution.
package opatest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/opatest"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// Version is the OPA release hack/test-servers.sh builds.
const Version = "v1.22.2"

// Policy is a small admission-like policy: package example, allow only when input.user is "alice".
const Policy = `package example

default allow := false

allow if input.user == "alice"
`

// Binary returns the cached OPA binary, failing the test with how to get it when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	bin := testproc.CachedBinary("opa", Version)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("OPA %s not found at %s: run hack/test-servers.sh (make test does)", Version, bin)
	}
	return bin
}

// Options of an OPA server.
type Options struct {
	// UploadSizeLimitBytes caps one decision_logs upload (gzip bytes); 0 keeps OPA's default (32 KiB).
	UploadSizeLimitBytes int
}

// Server is one running OPA.
type Server struct {
	URL string // http://127.0.0.1:port
	hc  *http.Client
}

// Start runs OPA with Policy, its decision_logs plugin uploading every 1–2 s to <receiverURL>/logs, where
// receiverURL is the decision_logs receiver's OPA endpoint (http://host:port).
// OPA keeps what it could not upload in a size buffer without limit, so it never drops a decision in a test.
// The process is stopped when the test ends; its log is shown if the test failed.
func Start(t testing.TB, receiverURL string, opts Options) *Server {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("policy.rego", Policy)
	write("config.yaml", fmt.Sprintf(`services:
  collector:
    url: %s
decision_logs:
  service: collector
  resource: /logs
  reporting:
    buffer_type: size
    min_delay_seconds: 1
    max_delay_seconds: 2
%s`, receiverURL, uploadLimit(opts)))
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logFile := filepath.Join(dir, "opa.log")
	p, err := testproc.Start("opa", testproc.Options{LogFile: logFile}, Binary(t), "run", "--server", "--addr", addr,
		"--config-file", filepath.Join(dir, "config.yaml"), filepath.Join(dir, "policy.rego"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + addr, hc: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 10*time.Second)
		s.hc.CloseIdleConnections()
		if t.Failed() {
			t.Logf("opa log:\n%s", testproc.LogTail(logFile, 1<<20))
		}
	})
	if err := p.WaitReady(20*time.Second, func() error { return testproc.GetOK(s.hc, s.URL+"/health", "") }); err != nil {
		t.Fatal(err)
	}
	return s
}

func uploadLimit(opts Options) string {
	if opts.UploadSizeLimitBytes == 0 {
		return ""
	}
	return fmt.Sprintf("    upload_size_limit_bytes: %d\n", opts.UploadSizeLimitBytes)
}

// Decide asks OPA for the decision of Policy on user and returns the decision id OPA logs it under.
func (s *Server) Decide(user string, seq int) (string, error) {
	body := fmt.Sprintf(`{"input":{"user":%q,"i":%d}}`, user, seq)
	resp, err := s.hc.Post(s.URL+"/v1/data/example/allow", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("OPA answered %s", resp.Status)
	}
	var out struct {
		DecisionID string `json:"decision_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if out.DecisionID == "" {
		return "", fmt.Errorf("OPA returned no decision id: is decision logging on?")
	}
	return out.DecisionID, nil
}
