// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package testproc // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// StartForTest starts bin as name for t with its output in dir/<name>.log and its working directory dir, stops it
// when t ends (SIGTERM, SIGKILL after 10 s) with the end of its log if t failed, and waits up to 30 s until ready
// succeeds. A server that does not start or become ready fails t.
func StartForTest(t testing.TB, name, dir string, ready func() error, bin string, args ...string) *Proc {
	t.Helper()
	logFile := filepath.Join(dir, name+".log")
	p, err := Start(name, Options{LogFile: logFile, Dir: dir}, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("%s log:\n%s", name, LogTail(logFile, 1<<16))
		}
	})
	if err := p.WaitReady(30*time.Second, ready); err != nil {
		t.Fatal(err)
	}
	return p
}

// CachedForTest returns bin, a CachedBinary path, for t: under -short it skips t, and without the binary it fails
// t with how to get it (server: the argument of hack/test-servers.sh that builds or installs it).
func CachedForTest(t testing.TB, bin, server string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s; skipped under -short", filepath.Base(bin))
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run `make test-servers` (or hack/test-servers.sh %s)", bin, server)
	}
	return bin
}
