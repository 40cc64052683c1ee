// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStringDecodesLikeEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"caf\u00e9"`, `"café"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83dx"`,
		`"\ud83d\u0041"`, `"tab\tnew\nline\\slash\/quote\""`, "\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"",
		`"\u0000"`, `"\b\f\r"`,
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(in), &want), in)
		got, ok := String([]byte(in))
		require.True(t, ok)
		assert.Equal(t, want, got, "%q", in)
	}
}
