// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLookup: the last member of a name wins, as in encoding/json, and a key is compared with its escapes undone.
func TestLookup(t *testing.T) {
	obj := []byte(`{"a": 1, "b": {"c": [3]}, "\u0061": "last", "d\"q": null}`)
	for _, tt := range []struct {
		key   string
		want  string
		found bool
	}{
		{"a", `"last"`, true},
		{"b", `{"c": [3]}`, true},
		{`d"q`, `null`, true},
		{"c", "", false},
	} {
		v, ok := Lookup(obj, tt.key)
		assert.Equal(t, tt.found, ok, tt.key)
		assert.Equal(t, tt.want, string(v), tt.key)
	}
	_, ok := Lookup([]byte(`[1, 2]`), "a")
	assert.False(t, ok, "an array has no members")
}
