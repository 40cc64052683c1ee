// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// stepRun records one `go test` invocation of the suite.
type stepRun struct {
	Name     string  `json:"name"`
	Command  string  `json:"command"`
	Seconds  float64 `json:"seconds"`
	ExitCode int     `json:"exit_code"`
	Log      string  `json:"log"` // the invocation's whole output, in the scratch directory
}

// runGo runs `go args...` with env added to the suite's environment. Each line it prints goes through onLine,
// which returns the line's readable text (go test -json events become what -v would print); that text is
// printed under the progress lines and written to logPath. A non-zero exit is a result, not an error; an
// error means the command could not run at all.
func runGo(args, env []string, logPath string, onLine func(string) string) (exitCode int, err error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return -1, err
	}
	defer logFile.Close()
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
		for sc.Scan() {
			text := onLine(sc.Text())
			fmt.Fprintln(logFile, text)
			indent(text)
		}
		_, _ = io.Copy(logFile, pr) // a line beyond the buffer: keep it in the log, keep the pipe drained
	}()
	waitErr := cmd.Wait()
	pw.Close()
	<-done
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
		return 0, nil
	case errors.As(waitErr, &exit):
		return exit.ExitCode(), nil
	default:
		return -1, waitErr
	}
}

// progress prints the suite's own lines, with the time since the suite started.
type progress struct{ began time.Time }

func (p progress) printf(format string, args ...any) {
	d := time.Since(p.began).Round(time.Second)
	fmt.Printf("[testbed %02d:%02d] %s\n", int(d.Minutes()), int(d.Seconds())%60, fmt.Sprintf(format, args...))
}

// indent prints a child's output line under the suite's progress lines.
func indent(line string) { fmt.Println("    " + strings.TrimRight(line, "\n")) }
