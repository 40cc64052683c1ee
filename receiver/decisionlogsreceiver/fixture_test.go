// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixture reads a decoder fixture, which the decoders' own tests share: internal/decode/testdata/decoders/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("internal", "decode", "testdata", "decoders", name))
	require.NoError(t, err)
	return raw
}
