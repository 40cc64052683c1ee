// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package gatekeeperexport // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"

import (
	"fmt"
	"os"
)

// OpenFile opens a file of the export directory for reading, refusing anything but a regular file.
// Gatekeeper's disk export runs on Linux only.
func OpenFile(path string) (*os.File, error) {
	f, err := os.Open(path) //nolint:gosec // G304: a file of the configured export directory
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %s", path, ErrNotRegular, fi.Mode().Type())
	}
	return f, nil
}

// Inode is not known here: a file is told from another by its name and size alone.
func Inode(os.FileInfo) uint64 { return 0 }
