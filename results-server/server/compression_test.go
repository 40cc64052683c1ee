// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/encoding"
)

// TestDecompressesWhatTheExporterCanSend guards the import in compression.go: without it the server binary has
// no decompressor for the exporter's compression settings.
func TestDecompressesWhatTheExporterCanSend(t *testing.T) {
	for _, name := range []string{"gzip", "zstd", "snappy"} {
		assert.NotNil(t, encoding.GetCompressor(name), name)
	}
}
