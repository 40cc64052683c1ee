// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package freeport // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"

import "os"

// claimPort opens path; without flock, processes are kept apart only by the port check.
func claimPort(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // G304: a port number in the temp directory
}
