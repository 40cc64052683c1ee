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

// jsonShape measures a JSON document as encoding/json reads it: its values (containers, elements, members)
// and the members of its widest object.
func jsonShape(v any) (values, widest int) {
	values = 1
	add := func(e any) {
		n, w := jsonShape(e)
		values += n
		widest = max(widest, w)
	}
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			add(e)
		}
	case map[string]any:
		widest = max(widest, len(v))
		for _, e := range v {
			add(e)
		}
	}
	return values, widest
}

func TestMeasure(t *testing.T) {
	for _, doc := range []string{
		`0`, `"s"`, `[1,2,3]`, `{"a":1,"b":[true,null,{"c":"d"}]}`,
		`{"k,[{":"a string with , [ { \" and \\ inside","x":["\"],", 2.5e3]}`,
		`[[[[1]]],{"a":{"b":{"c":[1,2]}}}]`,
		`{"a":{"b":1,"c":2,"d":3},"e":[{"f":1,"g":2,"h":3,"i":4}]}`,
		strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40),
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(doc), &v), doc)
		wantValues, wantWidest := jsonShape(v)
		s := Measure([]byte(doc), 1<<30)
		values, widest := s.Values, s.Widest
		assert.Equal(t, wantValues, values, doc)
		assert.Equal(t, wantWidest, widest, doc)
	}
	// Empty containers are counted as one value more, and an empty object as one member: on the safe side.
	s := Measure([]byte(`[{}]`), 100)
	assert.Equal(t, 3, s.Values)
	assert.Equal(t, 1, s.Widest)

	s = Measure([]byte("["+strings.Repeat("0,", 1_000_000)+"0]"), 100)
	assert.Equal(t, 101, s.Values, "counting stops just past the limit")
}

// TestScanCountsWhatMeasureMeasures: the sizes a scan counts are Measure's, for each member and for the object
// without one of them, so that pricing from a scan prices as measuring would.
func TestScanCountsWhatMeasureMeasures(t *testing.T) {
	for _, doc := range []string{
		`{}`, `{"input":1}`, `{"a":[],"input":{},"b":{"c":[1,[2,{}]]}}`, `{"a" : [ 1 , 2 ] , "input" : { "x" : { } } }`,
		`{"input":[1,2],"a":"[{,","input":{"k":1,"l":2,"m":3}}`, `{"\u0069nput":{"a":1,"b":2},"c":{"d":1}}`,
		`{"a":{"b":1,"c":2,"d":3},"e":[{"f":1,"g":2,"h":3,"i":4}]}`,
	} {
		obj, ms, err := Object([]byte(doc), nil)
		require.NoError(t, err, doc)
		for _, m := range ms {
			assert.Equal(t, Measure(m.Value, 1<<30), m.Size, "%s: %s", doc, m.Key)
		}
		body, _ := WithoutPath(obj, ms, []string{"input"})
		size, last := ms.SizeWithout("input")
		assert.Equal(t, Measure(body, 1<<30), size, doc)
		if m := ms.Last("input"); m != nil {
			assert.Same(t, m, &ms[last], "%s: the last input", doc)
		} else {
			assert.Equal(t, -1, last, "%s: no input", doc)
		}
	}
}
