// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package freeport // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"

import (
	"os"
	"syscall"
)

// claimPort takes an exclusive flock on path, which the kernel releases when the process exits, however it ends.
func claimPort(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
