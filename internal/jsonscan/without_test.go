// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithoutPath(t *testing.T) {
	for _, tt := range []struct {
		name, in  string
		path      []string
		wantBody  string
		wantValue string
	}{
		{"absent: the event itself", ` {"a":1} `, []string{"input"}, `{"a":1}`, ""},
		{"first", `{"input":{"x":[1]},"a":1}`, []string{"input"}, `{"a":1}`, `{"x":[1]}`},
		{"middle, spacing kept inside members", `{"a" : 1, "input" : 2, "b" : 3}`, []string{"input"}, `{"a" : 1,"b" : 3}`, `2`},
		{"last", `{"a":1,"input":"x"}`, []string{"input"}, `{"a":1}`, `"x"`},
		{"only", `{"input":null}`, []string{"input"}, `{}`, `null`},
		{"repeated: all go, the last is the value", `{"input":1,"input":2,"a":3,"input":4}`, []string{"input"}, `{"a":3}`, `4`},
		{"escaped key", `{"\u0069nput":1,"a":2}`, []string{"input"}, `{"a":2}`, `1`},
		{"not a prefix match", `{"inputs":1}`, []string{"input"}, `{"inputs":1}`, ""},
		{"nested", `{"a":{"b":1,"c":2},"d":3}`, []string{"a", "b"}, `{"a":{"c":2},"d":3}`, `1`},
		{"nested under a repeated key", `{"a":{"b":1},"a":{"b":2,"c":3}}`, []string{"a", "b"}, `{"a":{},"a":{"c":3}}`, `2`},
		{"nested, through a non-object", `{"a":[{"b":1}]}`, []string{"a", "b"}, `{"a":[{"b":1}]}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf [4]Member
			obj, ms, err := Object([]byte(tt.in), buf[:0])
			require.NoError(t, err)
			body, value := WithoutPath(obj, ms, tt.path)
			assert.Equal(t, tt.wantBody, string(body))
			assert.Equal(t, tt.wantValue, string(value))
		})
	}
}
