// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"errors"
	"os"
	"syscall"
)

var errLocked = syscall.EWOULDBLOCK

// flock takes an exclusive lock on f without waiting; the kernel releases it when f is closed or the process
// dies.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
