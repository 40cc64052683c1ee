// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

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
func requireDecoded(t *testing.T, got Event, want Event, wantBody, wantInput string) {
	t.Helper()
	require.Equal(t, want.Decision, got.Decision)
	require.JSONEq(t, wantBody, string(got.Body))
	if wantInput == "" {
		require.Nil(t, got.Input)
	} else {
		require.JSONEq(t, wantInput, string(got.Input))
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
