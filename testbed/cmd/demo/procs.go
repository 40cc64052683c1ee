// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// proc is one background process of the demo, as recorded in ./data/demo/pids ("name pid" lines, in start
// order). Each one is a session and process group leader (Setsid), so its pid is its process group id.
type proc struct {
	name string
	pid  int
}

func pidsFile(e env) string { return e.path("pids") }

func readPids(e env) ([]proc, error) {
	f, err := os.Open(pidsFile(e))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []proc
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || pid <= 1 {
			continue
		}
		out = append(out, proc{name: fields[0], pid: pid})
	}
	return out, sc.Err()
}

func recordPid(e env, p proc) error {
	f, err := os.OpenFile(pidsFile(e), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s %d\n", p.name, p.pid); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// alive says whether p still runs and is still the demo's process: a recycled pid of an unrelated process
// does not count, because every demo process has the absolute path of ./data/demo on its command line.
// A zombie (exited, not yet reaped) does not count either.
func alive(e env, p proc) bool {
	if !testproc.Running(p.pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(e.dir))
}

// groupAlive says whether any process of p's process group is left (a server's children included).
func groupAlive(e env, p proc) bool {
	if alive(e, p) {
		return true
	}
	// The leader is gone; children in its group would still answer a signal to the group.
	err := syscall.Kill(-p.pid, 0)
	return err == nil && leaderWasOurs(e, p)
}

// leaderWasOurs: after the leader exited, a process of its group with the demo directory on its command line
// shows that the group is still the demo's.
func leaderWasOurs(e env, p proc) bool {
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == p.pid && alive(e, proc{pid: pid}) {
			return true
		}
	}
	return false
}

// start starts a background process: its own session (it outlives `demo up` and a Ctrl-C in the terminal),
// stdout and stderr to ./data/demo/logs/<name>.log, working directory the repository root. The pid is recorded
// before start returns.
func start(e env, name string, extraEnv []string, bin string, args ...string) (*testproc.Proc, error) {
	p, err := testproc.Start(name, testproc.Options{LogFile: logPath(e, name), Env: extraEnv, Dir: e.root, Detach: true},
		bin, args...)
	if err != nil {
		return nil, err
	}
	if err := recordPid(e, proc{name: name, pid: p.Pid()}); err != nil {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		return nil, err
	}
	return p, nil
}

func logPath(e env, name string) string { return e.path("logs", name+".log") }

// logTail is the end of a process's log, for error messages.
func logTail(e env, name string, n int) string { return testproc.LogTail(logPath(e, name), n) }

// stopAll stops the recorded processes in reverse start order: SIGTERM to each process group, up to 10 s for
// all to exit, then SIGKILL for what is left. It removes the pids file. Nothing recorded is not an error.
func stopAll(e env, quiet bool) error {
	procs, err := readPids(e)
	if err != nil {
		return err
	}
	var running []proc
	for i := len(procs) - 1; i >= 0; i-- {
		if groupAlive(e, procs[i]) {
			running = append(running, procs[i])
		}
	}
	// One at a time, in reverse start order: the collector flushes its queues while the destinations still
	// run, and kube-apiserver stops before etcd.
	for _, p := range running {
		if !quiet {
			fmt.Printf("stopping %-15s (pid %d)\n", p.name, p.pid)
		}
		signal := func(sig syscall.Signal) error { return syscall.Kill(-p.pid, sig) }
		gone := func(d time.Duration) bool { return len(waitGone(e, []proc{p}, d)) == 0 }
		if testproc.Terminate(signal, gone, syscall.SIGTERM, 10*time.Second) {
			fmt.Printf("%s (pid %d) did not stop within 10 s: killed it\n", p.name, p.pid)
		}
	}
	if err := os.Remove(pidsFile(e)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// waitGone waits until none of procs' groups is left, and returns those still there at the deadline.
func waitGone(e env, procs []proc, timeout time.Duration) []proc {
	deadline := time.Now().Add(timeout)
	for {
		var left []proc
		for _, p := range procs {
			if groupAlive(e, p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runningProcs returns the recorded processes that still run.
func runningProcs(e env) ([]proc, error) {
	procs, err := readPids(e)
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, p := range procs {
		if groupAlive(e, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func down() error {
	e, err := findEnv()
	if err != nil {
		return err
	}
	procs, err := runningProcs(e)
	if err != nil {
		return err
	}
	if len(procs) == 0 {
		fmt.Println("demo: nothing is running")
		_ = os.Remove(pidsFile(e))
	} else if err := stopAll(e, false); err != nil {
		return err
	}
	if exists(e.dir) {
		fmt.Printf("demo: the data stays in %s for inspection (logs in %s).\n", e.rel(e.dir), e.rel(e.path("logs")))
		fmt.Printf("      `make demo` starts afresh (it deletes it); delete it yourself with: rm -rf %s\n", e.rel(e.dir))
	}
	return nil
}

// copyExecutable copies the running program to dst, so that the background broker does not depend on
// `go run`'s temporary build directory.
func copyExecutable(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
