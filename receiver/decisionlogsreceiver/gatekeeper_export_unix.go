// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"os"
	"syscall"
)

// openExportFile opens a file of the export directory for reading, refusing a symlink planted there: the
// directory is shared with Gatekeeper, and the collector must read only what Gatekeeper wrote.
func openExportFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0) //nolint:gosec // G304: a file of the configured export directory
}

// fileInode tells a file from another one of the same name and size.
func fileInode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
