// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fixture reads testdata/decoders/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "decoders", name))
	require.NoError(t, err)
	return raw
}

// requireDecoded checks a decoded event against its expected decision, body and input (JSON, "" for none).
func requireDecoded(t *testing.T, got decoded, want decoded, wantBody, wantInput string) {
	t.Helper()
	require.Equal(t, want.decision, got.decision)
	require.JSONEq(t, wantBody, string(got.body))
	if wantInput == "" {
		require.Nil(t, got.input)
	} else {
		require.JSONEq(t, wantInput, string(got.input))
	}
}

func ptr[T any](v T) *T { return &v }

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}
