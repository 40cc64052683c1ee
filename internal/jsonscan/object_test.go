// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestObjectAgreesWithEncodingJSON(t *testing.T) {
	deep := func(n int) string { return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}" }
	for _, in := range []string{
		`{}`, ` { } `, "\t{\"a\":1}\r\n", `{"a":{"b":[1,-2.5e+3,true,false,null,"x"]}}`,
		`{"a":"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"}`, `{"a":"` + "\xff\xfe" + `"}`,
		`{"a":0}`, `{"a":-0.0e0}`, `{"a":1E9}`,
		deep(10000), deep(10001),
		// Invalid.
		``, ` `, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`,
		`{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a":"\x"}`,
		`{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}", `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":{"b"}}`,
		`{"a":1}}`, `{"a":1} {}`, `{"a":1}x`, `{'a':1}`, `{"a":NaN}`, `{"a":[}`,
		// Valid JSON but not objects.
		`[]`, `"x"`, `1`, `true`, `null`,
	} {
		var buf [4]Member
		_, _, err := Object([]byte(in), buf[:0])
		valid := json.Valid([]byte(in))
		isObject := valid && strings.TrimSpace(in)[0] == '{'
		assert.Equal(t, isObject, err == nil, "%.60q: %v", in, err)
	}
}

func TestObjectErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, "want a JSON object, got empty input"},
		{"  \n", "want a JSON object, got empty input"},
		{`[1,2]`, "want a JSON object, got array"},
		{` "x" `, "want a JSON object, got string"},
		{`12`, "want a JSON object, got number"},
		{`null`, "want a JSON object, got null"},
		{`[1,`, "invalid JSON at byte 3: unexpected end of input"},
		{`{"decision_id":"a","path":"x`, "invalid JSON at byte 28: unexpected end of input"},
		{`  {"a":1`, "invalid JSON at byte 8: unexpected end of input"},
		{`{"a":1,}`, `invalid JSON at byte 7: invalid character '}' looking for beginning of object key string`},
		{`{"a" 1}`, `invalid JSON at byte 5: invalid character '1' after object key`},
		{`{"a":1 "b":2}`, `invalid JSON at byte 7: invalid character '"' after object key:value pair`},
		{`{"a":[1 2]}`, `invalid JSON at byte 8: invalid character '2' after array element`},
		{`{"a":tru}`, `invalid JSON at byte 8: invalid character '}' in literal true`},
		{`{"a":01}`, `invalid JSON at byte 6: invalid character '1' after object key:value pair`},
		{`{"a":-x}`, `invalid JSON at byte 6: invalid character 'x' in numeric literal`},
		{`{"a":"\q"}`, `invalid JSON at byte 7: invalid character 'q' in string escape code`},
		{`{"a":"\u12x4"}`, `invalid JSON at byte 10: invalid character 'x' in \u hexadecimal character escape`},
		{"{\"a\":\"\t\"}", `invalid JSON at byte 6: invalid character '\t' in string literal`},
		{`{"a":1} {}`, `invalid JSON at byte 8: invalid character '{' after top-level value`},
		{`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, "invalid JSON at byte 10004: exceeded max depth"},
	} {
		var buf [4]Member
		_, _, err := Object([]byte(tt.in), buf[:0])
		require.EqualError(t, err, tt.want, "%.40q", tt.in)
	}
}
