package decisionlogsreceiver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

func TestScanJSONEventAgreesWithEncodingJSON(t *testing.T) {
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
		var buf [4]jsonMember
		_, _, err := scanJSONEvent([]byte(in), buf[:0])
		valid := json.Valid([]byte(in))
		isObject := valid && strings.TrimSpace(in)[0] == '{'
		assert.Equal(t, isObject, err == nil, "%.60q: %v", in, err)
	}
}

func TestScanJSONEventErrors(t *testing.T) {
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
		var buf [4]jsonMember
		_, _, err := scanJSONEvent([]byte(tt.in), buf[:0])
		require.EqualError(t, err, tt.want, "%.40q", tt.in)
	}
}

func TestJSONStringDecodesLikeEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"caf\u00e9"`, `"café"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83dx"`,
		`"\ud83d\u0041"`, `"tab\tnew\nline\\slash\/quote\""`, "\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"",
		`"\u0000"`, `"\b\f\r"`,
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(in), &want), in)
		got, ok := jsonString([]byte(in))
		require.True(t, ok)
		assert.Equal(t, want, got, "%q", in)
	}
}

func TestWithoutPath(t *testing.T) {
	for _, tt := range []struct {
		name, in  string
		path      []string
		wantBody  string
		wantValue string
	}{
		{"absent: the event itself", ` {"a":1} `, inputPath, `{"a":1}`, ""},
		{"first", `{"input":{"x":[1]},"a":1}`, inputPath, `{"a":1}`, `{"x":[1]}`},
		{"middle, spacing kept inside members", `{"a" : 1, "input" : 2, "b" : 3}`, inputPath, `{"a" : 1,"b" : 3}`, `2`},
		{"last", `{"a":1,"input":"x"}`, inputPath, `{"a":1}`, `"x"`},
		{"only", `{"input":null}`, inputPath, `{}`, `null`},
		{"repeated: all go, the last is the value", `{"input":1,"input":2,"a":3,"input":4}`, inputPath, `{"a":3}`, `4`},
		{"escaped key", `{"\u0069nput":1,"a":2}`, inputPath, `{"a":2}`, `1`},
		{"not a prefix match", `{"inputs":1}`, inputPath, `{"inputs":1}`, ""},
		{"nested", `{"a":{"b":1,"c":2},"d":3}`, []string{"a", "b"}, `{"a":{"c":2},"d":3}`, `1`},
		{"nested under a repeated key", `{"a":{"b":1},"a":{"b":2,"c":3}}`, []string{"a", "b"}, `{"a":{},"a":{"c":3}}`, `2`},
		{"nested, through a non-object", `{"a":[{"b":1}]}`, []string{"a", "b"}, `{"a":[{"b":1}]}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf [4]jsonMember
			obj, ms, err := scanJSONEvent([]byte(tt.in), buf[:0])
			require.NoError(t, err)
			body, value := withoutPath(obj, ms, tt.path)
			assert.Equal(t, tt.wantBody, string(body))
			assert.Equal(t, tt.wantValue, string(value))
		})
	}
}

func TestTimeField(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{`"2024-05-06T07:08:09Z"`, utc("2024-05-06T07:08:09Z"), ""},
		{`"2024-05-06T09:08:09.123456789+02:00"`, utc("2024-05-06T07:08:09.123456789Z"), ""},
		{`1715000000`, utc("2024-05-06T12:53:20Z"), ""},
		{`1645018228.7589638`, utc("2022-02-16T13:30:28.7589638Z"), ""},
		{`1715000000123`, utc("2024-05-06T12:53:20.123Z"), ""},
		{`1715000000123.5`, utc("2024-05-06T12:53:20.1235Z"), ""},
		{`1715000000123456`, utc("2024-05-06T12:53:20.123456Z"), ""},
		{`1715000000123456789`, utc("2024-05-06T12:53:20.123456789Z"), ""},
		{`1.715e9`, utc("2024-05-06T12:53:20Z"), ""},
		{`null`, time.Time{}, ""},
		{`-1`, time.Time{}, `ts: "-1" is not a time in seconds or milliseconds since 1970`},
		{`1e400`, time.Time{}, `ts: "1e400" is not a time in seconds or milliseconds since 1970`},
		{`99999999999999999999`, time.Time{}, `ts: "99999999999999999999" is not a time in seconds or milliseconds since 1970`},
		{`"yesterday"`, time.Time{}, `ts: want an RFC 3339 time, got "yesterday"`},
		{`"0001-01-01T00:00:00Z"`, time.Time{}, ""},
		{`"1969-12-31T23:59:59Z"`, time.Time{}, `ts: "1969-12-31T23:59:59Z" is out of range (1970 to 2262)`},
		{`"2263-01-01T00:00:00Z"`, time.Time{}, `ts: "2263-01-01T00:00:00Z" is out of range (1970 to 2262)`},
		{`99999999999`, time.Time{}, `ts: "99999999999" is out of range (1970 to 2262)`},
		{`9223372036854775807`, utc("2262-04-11T23:47:16.854775807Z"), ""},
		{`true`, time.Time{}, "ts: want an RFC 3339 string or a number, got bool"},
	} {
		got, err := timeField("ts", []byte(tt.in))
		if tt.err != "" {
			require.EqualError(t, err, tt.err)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestContentIDIsStable(t *testing.T) {
	// Downstream deduplication keys on these values: changing them is a breaking change (bump
	// decisionIDVersion instead of editing the expectation).
	assert.Equal(t, "239b74afe9f88de14fceb9659a65618f", contentID("a", "b"))
	assert.NotEqual(t, contentID("ab", "c"), contentID("a", "bc"))
}
