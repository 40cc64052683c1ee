// Package jsonpdata converts JSON documents into pdata values for log record bodies, keeping integers as
// integers (encoding/json alone would turn every number into a float, so a count of 3 would read 3.0 and a
// timestamp in seconds would lose precision).
package jsonpdata // import "github.com/otelcol-policy/otelcol-policy/pkg/jsonpdata"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// SetValue decodes one JSON document into dest.
func SetValue(raw []byte, dest pcommon.Value) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	set(v, dest)
	return nil
}

func set(v any, dest pcommon.Value) {
	switch t := v.(type) {
	case nil:
		// An empty value is pdata's null.
	case bool:
		dest.SetBool(t)
	case string:
		dest.SetStr(t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			dest.SetInt(i)
		} else if f, err := t.Float64(); err == nil {
			dest.SetDouble(f)
		} else {
			dest.SetStr(t.String())
		}
	case []any:
		s := dest.SetEmptySlice()
		s.EnsureCapacity(len(t))
		for _, e := range t {
			set(e, s.AppendEmpty())
		}
	case map[string]any:
		m := dest.SetEmptyMap()
		m.EnsureCapacity(len(t))
		for k, e := range t {
			set(e, m.PutEmpty(k))
		}
	}
}
