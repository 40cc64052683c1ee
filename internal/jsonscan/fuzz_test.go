// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The seed corpus in testdata/fuzz/FuzzObject is the decision receiver's: its fixtures and edge cases (deep
// nesting, invalid UTF-8, huge numbers, escaped and repeated keys, truncations). Run it with
//
//	go test -run '^$' -fuzz FuzzObject -fuzztime 30s

func FuzzObject(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		// A scan accepts what encoding/json accepts, and decodes strings as it does.
		obj, ms, err := Object(raw, nil)
		trimmed := bytes.TrimLeft(raw, " \t\r\n")
		isObject := json.Valid(raw) && trimmed[0] == '{'
		require.Equal(t, isObject, err == nil, "scan error: %v", err)
		for _, m := range ms {
			if s, ok := String(m.Value); ok {
				var want string
				require.NoError(t, json.Unmarshal(m.Value, &want))
				require.Equal(t, want, s)
			}
			// What a scan counts is what Measure measures.
			require.Equal(t, Measure(m.Value, len(m.Value)), m.Size)
			require.Equal(t, m.Value, obj[m.End-len(m.Value):m.End])
		}
		if err == nil {
			for _, name := range []string{"input", string(firstName(ms))} {
				body, _ := WithoutPath(obj, ms, []string{name})
				require.True(t, json.Valid(body), "body %q", body)
				size, _ := ms.SizeWithout(name)
				require.Equal(t, Measure(body, len(body)), size, "without %q", name)
			}
			end, err := ScanValue(obj, 0, 0)
			require.NoError(t, err)
			require.Equal(t, len(obj), end)
			require.Equal(t, len(obj), Skip(obj, 0))
		}

		// The walkers trust that a scan validated their input; on anything else they may read nonsense, but
		// must neither hang nor panic.
		MembersOf(raw)
		Strings(raw)
		Lookup(raw, "a")
		c := NewCursor(raw)
		c.EachMember(func([]byte) { c.Str() })
		Measure(raw, len(raw))
		for i := 0; i < len(raw) && i < 64; i++ {
			Skip(raw, i)
		}
	})
}

func firstName(ms Members) []byte {
	if len(ms) == 0 {
		return nil
	}
	return ms[0].Name()
}
