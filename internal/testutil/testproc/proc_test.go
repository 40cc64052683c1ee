// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package testproc

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startShell(t *testing.T, script string) (*Proc, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "sh.log")
	p, err := Start("sh", Options{LogFile: log, Env: []string{"GREETING=hello"}}, "/bin/sh", "-c", script)
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(syscall.SIGKILL, 0) })
	return p, log
}

func TestStopEndsAProcessThatHonoursTheSignal(t *testing.T) {
	// The trap is set before the greeting, which is the readiness signal: a SIGTERM right after it is trapped.
	p, log := startShell(t, `trap 'echo terminated; exit 0' TERM; echo "$GREETING"; while :; do sleep 0.05; done`)
	require.NoError(t, p.WaitReady(10*time.Second, func() error {
		if LogTail(log, 100) != "hello\n" {
			return errors.New("no greeting yet")
		}
		return nil
	}), "the environment is passed and the output goes to the log")

	p.Stop(syscall.SIGTERM, 10*time.Second)
	assert.True(t, p.HasExited())
	assert.Equal(t, "hello\nterminated\n", LogTail(log, 100), "the log file is complete once Exited is closed")
}

func TestStopKillsAProcessThatIgnoresTheSignal(t *testing.T) {
	p, log := startShell(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	require.NoError(t, p.WaitReady(10*time.Second, func() error {
		if LogTail(log, 100) == "" {
			return errors.New("not ready")
		}
		return nil
	}))
	killed := Terminate(func(s syscall.Signal) error { return p.cmd.Process.Signal(s) }, func(d time.Duration) bool {
		select {
		case <-p.Exited():
			return true
		case <-time.After(d):
			return false
		}
	}, syscall.SIGTERM, 200*time.Millisecond)
	assert.True(t, killed)
	assert.True(t, p.HasExited())
}

func TestWaitReadyGivesUpWhenTheProcessExits(t *testing.T) {
	p, _ := startShell(t, `echo "cannot bind"; exit 3`)
	start := time.Now()
	err := p.WaitReady(time.Minute, func() error { return errors.New("connection refused") })
	require.Error(t, err)
	assert.Less(t, time.Since(start), 30*time.Second, "not waited for until the timeout")
	assert.Contains(t, err.Error(), "sh exited before it was ready (last check: connection refused)")
	assert.Contains(t, err.Error(), "cannot bind", "the end of the log explains why")
}

func TestWaitReadyTimesOut(t *testing.T) {
	err := WaitReady("server", 0, func() bool { return false }, func() error { return errors.New("503") })
	assert.EqualError(t, err, "server not ready after 0s: 503")
}

func TestCachedBinaryFollowsCacheDir(t *testing.T) {
	t.Setenv("CACHE_DIR", "/cache")
	assert.Equal(t, "/cache/bin/opa-v1.0.0", CachedBinary("opa", "v1.0.0"))
	t.Setenv("CACHE_DIR", "")
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".cache", "otelcol-policy", "bin", "etcd-v3"), CachedBinary("etcd", "v3"))
}
