// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package testproc starts the server binaries that the tests and the demo run (etcd, kube-apiserver, MinIO,
// PostgreSQL, OPA, the collector): where hack/test-servers.sh caches them, where their output goes, how
// readiness is waited for and how they are stopped, in one place.
package testproc // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// CacheDir is where hack/test-servers.sh puts what it builds: $CACHE_DIR, else ~/.cache/otelcol-policy.
func CacheDir() string {
	if d := os.Getenv("CACHE_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "otelcol-policy")
}

// CachedBinary is the path hack/test-servers.sh builds release version of name to.
func CachedBinary(name, version string) string {
	return filepath.Join(CacheDir(), "bin", name+"-"+version)
}

// Options of a process.
type Options struct {
	// LogFile receives stdout and stderr. It is appended to, so that a restarted server keeps its earlier lines.
	LogFile string
	// Env is added to the environment the caller runs with.
	Env []string
	// Dir is the working directory; empty for the caller's.
	Dir string
	// Credential runs the process as another user (PostgreSQL refuses to run as root).
	Credential *syscall.Credential
	// Detach starts the process in a session of its own, so that it outlives the caller and a Ctrl-C in its
	// terminal (the demo). Otherwise the process is killed when the caller dies, whatever way it ends, so that
	// a test that panics or times out leaves no server behind.
	Detach bool
}

// Proc is a started process.
type Proc struct {
	name    string
	logFile string
	cmd     *exec.Cmd

	// The process is reaped only once something waits for it (Exited, Stop): a server shared by a whole test
	// binary runs until the binary exits, and a goroutine waiting for it would be reported as leaked.
	waitOnce sync.Once
	exited   chan struct{}
}

// Start starts bin with args.
func Start(name string, opts Options, bin string, args ...string) (*Proc, error) {
	logf, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The process writes to its own copy of the descriptor.
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = opts.Dir
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: opts.Credential}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: opts.Credential}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return &Proc{name: name, logFile: opts.LogFile, cmd: cmd, exited: make(chan struct{})}, nil
}

// Pid is the process id; with Detach, also its process group id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited; from the first call on, the process is reaped when it exits.
func (p *Proc) Exited() <-chan struct{} {
	p.waitOnce.Do(func() {
		go func() {
			_ = p.cmd.Wait()
			close(p.exited)
		}()
	})
	return p.exited
}

// HasExited says whether the process has exited, without reaping it.
func (p *Proc) HasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return !Running(p.Pid())
	}
}

// Running says whether process pid exists and has not exited: a zombie (exited, not yet reaped) has.
func Running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold any character.
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// Stop asks the process to stop with sig, kills it when it has not exited within grace, and returns once it
// has exited. A process that has exited already is left alone.
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) {
	exited := p.Exited()
	Terminate(func(s syscall.Signal) error { return p.cmd.Process.Signal(s) }, func(d time.Duration) bool {
		select {
		case <-exited:
			return true
		case <-time.After(d):
			return false
		}
	}, sig, grace)
}

// LogTail is the end of the process's log, for error messages.
func (p *Proc) LogTail(n int) string { return LogTail(p.logFile, n) }

// ReadyError is the error of a process that did not become ready, with the end of its log.
func (p *Proc) ReadyError(err error) error {
	return fmt.Errorf("%w\n%s log (tail):\n%s", err, p.name, p.LogTail(3000))
}

// Terminate sends sig, waits up to grace for the process to be gone, then sends SIGKILL and waits for it to be
// gone. signal and waitGone stand for a process this program started (Proc.Stop) or for a process group
// recorded by an earlier run (the demo's `down`). It says whether the process had to be killed.
func Terminate(signal func(syscall.Signal) error, waitGone func(time.Duration) bool, sig syscall.Signal, grace time.Duration) (killed bool) {
	if signal(sig) != nil || waitGone(grace) {
		return false
	}
	_ = signal(syscall.SIGKILL)
	waitGone(5 * time.Second)
	return true
}

// LogTail is the last n bytes of the file at path.
func LogTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
