// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package collectortest runs the otelcol-policy binary in end-to-end tests: the binary `make build` produced,
// in a directory of the test's own, on ports of its own, so that tests exercise exactly what users run.
package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
)

// BinaryEnv names the variable `make test` sets to the binary under test.
const BinaryEnv = "OTELCOL_POLICY_BIN"

// Binary returns the collector binary: $OTELCOL_POLICY_BIN, else bin/otelcol-policy at the repository root.
// Under -short it skips t: `make test-unit` runs before, or without, `make build`.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the collector binary; skipped under -short")
	}
	if p := os.Getenv(BinaryEnv); p != "" {
		return p
	}
	p := filepath.Join(RepoRoot(t), "bin", "otelcol-policy")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the collector binary %s is missing: run `make build` (`make test` does it first)", p)
	}
	return p
}

// RepoRoot is the directory holding this module's go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module github.com/otelcol-policy/otelcol-policy\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("not inside the otelcol-policy repository")
		}
		dir = parent
	}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// Collector is one running collector process.
type Collector struct {
	t      testing.TB
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error // of cmd.Wait, once exited is closed
}

// Start runs the binary in dir with the given --config sources (files or confmap URIs, merged in order).
// KUBECONFIG points at a file that does not exist, so that a developer's own cluster never leaks into a test.
// The process is killed when the test ends if it is still running.
func Start(t testing.TB, dir string, configs ...string) *Collector {
	t.Helper()
	return StartEnv(t, dir, []string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")}, configs...)
}

// StartEnv is Start with extra environment variables (NAME=value), which override the inherited ones.
func StartEnv(t testing.TB, dir string, env []string, configs ...string) *Collector {
	t.Helper()
	args := make([]string, 0, len(configs))
	for _, c := range configs {
		args = append(args, "--config="+c)
	}
	cmd := exec.Command(Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Collector{t: t, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			t.Logf("collector output (%s):\n%s", dir, c.Output())
		}
	})
	return c
}

// Output is everything the process printed so far.
func (c *Collector) Output() string { return c.out.String() }

// Stop sends SIGTERM and waits for a clean exit.
func (c *Collector) Stop() {
	c.t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		if c.err != nil {
			c.t.Fatalf("collector exited with %v:\n%s", c.err, c.Output())
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("collector did not stop within 30s:\n%s", c.Output())
	}
}

// WaitOutput waits until the process printed s.
func (c *Collector) WaitOutput(s string, timeout time.Duration) {
	c.t.Helper()
	Eventually(c.t, timeout, func() error {
		if !strings.Contains(c.Output(), s) {
			return fmt.Errorf("output does not contain %q yet", s)
		}
		return nil
	})
}

// WaitHealthy waits until a health_check endpoint answers 200.
func (c *Collector) WaitHealthy(url string) {
	c.t.Helper()
	Eventually(c.t, 30*time.Second, func() error {
		select {
		case <-c.exited:
			return fmt.Errorf("collector exited: %w", c.err)
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health check answered %s", resp.Status)
		}
		return nil
	})
}

// Eventually retries f every 100ms until it returns nil, and fails the test with f's last error at the deadline.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Pid is the process id, for reading its resource usage.
func (c *Collector) Pid() int { return c.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (c *Collector) Exited() <-chan struct{} { return c.exited }
