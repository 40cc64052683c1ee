// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadatatest"
)

// startOn starts a receiver with cfg and returns it, or the error of its Start (after which it has shut itself
// down, as the collector's Start does).
func startOn(t *testing.T, cfg *Config) (*decisionsReceiver, error) {
	rcv, err := newReceiver(cfg, metadatatest.NewSettings(componenttest.NewTelemetry()), consumertest.NewNop())
	require.NoError(t, err)
	return rcv, rcv.Start(context.Background(), componenttest.NewNopHost())
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	st, err := os.Lstat(path)
	require.NoError(t, err)
	return st
}

func assertServes(t *testing.T, tr *testReceiver, path string, n int) {
	t.Helper()
	c := dialUnix(t, path)
	write(t, c, gatekeeperLine(n)+"\n")
	require.NoError(t, c.Close())
	tr.waitDecisions(1, 5*time.Second)
	tr.sink.Reset()
}

// TestSecondReceiverOnAServedSocketIsRefused: a second collector on the path of a running one does not start,
// says why, and neither takes the socket over nor removes it; the first removes it when it stops.
func TestSecondReceiverOnAServedSocketIsRefused(t *testing.T) {
	cfg, path := unixConfig(t)
	first := startReceiver(t, cfg)
	socket := stat(t, path)

	_, err := startOn(t, cfg)
	require.Error(t, err)
	assert.ErrorContains(t, err, path+" is in use: another collector holds "+path+".lock")

	assert.True(t, os.SameFile(socket, stat(t, path)), "the first one's socket is in place")
	assertServes(t, first, path, 1)

	require.NoError(t, first.rcv.Shutdown(context.Background()))
	_, err = os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the first one removes its socket")
	_, err = os.Lstat(path + ".lock")
	assert.ErrorIs(t, err, os.ErrNotExist, "and its lock")

	// Started again, as after a rolling update.
	second, err := startOn(t, cfg)
	require.NoError(t, err)
	require.NoError(t, second.Shutdown(context.Background()))
}

// TestLiveListenerOfAnotherProgramIsNotReplaced: a socket that accepts connections, from a process that takes
// no lock, is not the receiver's to replace.
func TestLiveListenerOfAnotherProgramIsNotReplaced(t *testing.T) {
	cfg, path := unixConfig(t)
	other, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer other.Close()

	_, err = startOn(t, cfg)
	assert.ErrorContains(t, err, "a live listener answers on "+path)
	c, err := net.Dial("unix", path)
	require.NoError(t, err, "the other program still serves its socket")
	c.Close()
}

// TestSocketReplacedByAnotherIsNotRemovedAtShutdown: if another process put its own socket at the path while
// the receiver ran, the receiver's shutdown leaves it alone.
func TestSocketReplacedByAnotherIsNotRemovedAtShutdown(t *testing.T) {
	cfg, path := unixConfig(t)
	rcv, err := startOn(t, cfg)
	require.NoError(t, err)

	require.NoError(t, os.Remove(path))
	other, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer other.Close()
	theirs := stat(t, path)

	require.NoError(t, rcv.Shutdown(context.Background()))
	assert.True(t, os.SameFile(theirs, stat(t, path)), "the other process's socket is in place")
}

// TestStaleSocketAndLockOfACrashedCollectorAreReplaced: a collector that died leaves its socket and lock file;
// the kernel released the lock, nobody accepts on the socket, and the next collector starts.
func TestStaleSocketAndLockOfACrashedCollectorAreReplaced(t *testing.T) {
	cfg, path := unixConfig(t)
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	require.NoError(t, os.WriteFile(path+".lock", nil, 0o600))
	stale := stat(t, path)

	tr := startReceiver(t, cfg)
	assert.False(t, os.SameFile(stale, stat(t, path)), "a new socket")
	assertServes(t, tr, path, 1)
}

// TestSocketHasItsModeWhateverTheUmask: the socket is created with socket_mode even under a umask that would
// open it to everyone, and nothing but the socket and its lock is left in its directory.
func TestSocketHasItsModeWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	cfg, path := unixConfig(t)
	cfg.NDJSON[0].SocketMode = "0600"
	tr := startReceiver(t, cfg)

	assert.Equal(t, os.FileMode(0o600), stat(t, path).Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"decisions.sock", "decisions.sock.lock"}, names)
	assert.Equal(t, os.FileMode(0o600), stat(t, path+".lock").Mode().Perm())
	assertServes(t, tr, path, 1)
}
