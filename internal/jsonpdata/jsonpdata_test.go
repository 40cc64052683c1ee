// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonpdata

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestSetValue(t *testing.T) {
	v := pcommon.NewValueEmpty()
	require.NoError(t, SetValue([]byte(`{"a":1,"b":1.5,"c":"x","d":[true,null,{"e":-7}],"f":12345678901234,"g":1e400}`), v))
	assert.Equal(t, map[string]any{
		"a": int64(1), "b": 1.5, "c": "x", "d": []any{true, nil, map[string]any{"e": int64(-7)}},
		"f": int64(12345678901234), "g": "1e400",
	}, v.Map().AsRaw())
}

func TestSetValueErrors(t *testing.T) {
	for _, bad := range []string{`{"a":`, `{} {}`, ``} {
		assert.Error(t, SetValue([]byte(bad), pcommon.NewValueEmpty()), bad)
	}
}

func TestSetValueMatchesEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`{"a":"caf\u00e9","b":"tab\there","c":"\ud83d\ude00","d":[],"e":{},"f":-0.5,"g":1e3,"h":false,"i":null}`,
		`{"dup":1,"dup":2}`,
		`["x",1,[2,[3]],{"k":"v"}]`,
		`"just a string"`,
		`12345678901234567890`,
	} {
		v := pcommon.NewValueEmpty()
		require.NoError(t, SetValue([]byte(doc), v), doc)
		var want any
		require.NoError(t, json.Unmarshal([]byte(doc), &want))
		got, err := json.Marshal(v.AsRaw())
		require.NoError(t, err)
		wantJSON, _ := json.Marshal(want)
		assert.JSONEq(t, string(wantJSON), string(got), doc)
	}
	for _, bad := range []string{`{"a":1,}`, `{"a" 1}`, `[1 2]`, `{"a":"\x01"}`, `01`, `-`, `{"a":tru}`, `"unterminated`} {
		assert.Error(t, SetValue([]byte(bad), pcommon.NewValueEmpty()), bad)
	}
}

func FuzzSetValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\u00e9"`, `[[[]]]`, `{"a":1e400}`, `-0`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := SetValue(raw, pcommon.NewValueEmpty())
		if json.Valid(raw) && err != nil {
			t.Fatalf("valid JSON %q rejected: %v", raw, err)
		}
		if !json.Valid(raw) && err == nil {
			t.Fatalf("invalid JSON %q accepted", raw)
		}
	})
}

func BenchmarkSetValue(b *testing.B) {
	doc := []byte(`{"decision_id":"00000000-0000-4000-8000-000000000001","path":"kubernetes/admission","result":{"allowed":false},` +
		`"timestamp":"2026-11-22T08:00:00.000000001Z","labels":{"id":"opa-1","version":"1.22.2"},"requested_by":"10.0.0.1:4242",` +
		`"metrics":{"timer_rego_query_eval_ns":12345,"timer_server_handler_ns":67890}}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = SetValue(doc, pcommon.NewValueEmpty())
	}
}
