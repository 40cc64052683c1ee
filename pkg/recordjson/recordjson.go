// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package recordjson writes a log record as one flat JSON object, the line format of the s3 and kafka
// exporters: a query engine (Athena, DuckDB, ClickHouse, Spark) or a Kafka consumer reads it without knowing
// OTLP. docs/json-lines.md documents the format.
package recordjson // import "github.com/otelcol-policy/otelcol-policy/pkg/recordjson"

import (
	"encoding/base64"
	"iter"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Fields of the line besides the attributes. An attribute never takes one of these names: a record attribute
// with such a name is written under AttributesPrefix+name, a resource attribute under ResourcePrefix+name.
const (
	FieldTime           = "time"
	FieldObservedTime   = "observed_time"
	FieldSeverityText   = "severity_text"
	FieldSeverityNumber = "severity_number"
	FieldEventName      = "event_name"
	FieldTraceID        = "trace_id"
	FieldSpanID         = "span_id"
	FieldBody           = "body"

	AttributesPrefix = "attributes."
	ResourcePrefix   = "resource."
)

func reserved(name string) bool {
	switch name {
	case FieldTime, FieldObservedTime, FieldSeverityText, FieldSeverityNumber, FieldEventName, FieldTraceID,
		FieldSpanID, FieldBody:
		return true
	}
	return false
}

// Append appends lr, with the attributes of its resource, as one JSON object (no newline). Fields come in a
// fixed order: the record's own fields, the resource attributes, the record attributes, and the body last. A
// record attribute hides a resource attribute of the same name (policyresult.AllAttributes). Fields without a
// value (zero time, no severity, empty body) are left out.
func Append(dst []byte, res pcommon.Resource, lr plog.LogRecord) []byte {
	open := len(dst)
	dst = append(dst, '{')
	if ts := lr.Timestamp(); ts != 0 {
		dst = appendKey(dst, open, FieldTime)
		dst = appendTime(dst, ts)
	}
	if ts := lr.ObservedTimestamp(); ts != 0 {
		dst = appendKey(dst, open, FieldObservedTime)
		dst = appendTime(dst, ts)
	}
	if s := lr.SeverityText(); s != "" {
		dst = appendKey(dst, open, FieldSeverityText)
		dst = appendString(dst, s)
	}
	if n := lr.SeverityNumber(); n != plog.SeverityNumberUnspecified {
		dst = appendKey(dst, open, FieldSeverityNumber)
		dst = strconv.AppendInt(dst, int64(n), 10)
	}
	if e := lr.EventName(); e != "" {
		dst = appendKey(dst, open, FieldEventName)
		dst = appendString(dst, e)
	}
	if id := lr.TraceID(); !id.IsEmpty() {
		dst = appendKey(dst, open, FieldTraceID)
		dst = appendString(dst, id.String())
	}
	if id := lr.SpanID(); !id.IsEmpty() {
		dst = appendKey(dst, open, FieldSpanID)
		dst = appendString(dst, id.String())
	}
	attrs := lr.Attributes()
	for k, v := range policyresult.AllAttributes(res.Attributes(), attrs) {
		if reserved(k) {
			if _, own := attrs.Get(k); own {
				k = AttributesPrefix + k
			} else {
				k = ResourcePrefix + k
			}
		}
		dst = appendKey(dst, open, k)
		dst = appendValue(dst, v)
	}
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		dst = appendKey(dst, open, FieldBody)
		dst = appendValue(dst, body)
	}
	return append(dst, '}')
}

// appendKey appends `"name":` to the object opened at dst[open], after a comma unless it is the first member.
// A plain function rather than a closure over dst: the closure kept dst in memory across every append.
func appendKey(dst []byte, open int, name string) []byte {
	if len(dst) > open+1 {
		dst = append(dst, ',')
	}
	dst = appendString(dst, name)
	return append(dst, ':')
}

func appendTime(dst []byte, ts pcommon.Timestamp) []byte {
	dst = append(dst, '"')
	dst = ts.AsTime().UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// AppendValue appends v as JSON, in the encoding of the line's values: map keys in their order, bytes as
// base64, non-finite doubles as strings.
func AppendValue(dst []byte, v pcommon.Value) []byte { return appendValue(dst, v) }

// AppendObject appends attrs as one JSON object, members in the order attrs yields them, values as AppendValue
// writes them: the Parquet format keeps the attributes that have no column of their own so.
func AppendObject(dst []byte, attrs iter.Seq2[string, pcommon.Value]) []byte {
	open := len(dst)
	dst = append(dst, '{')
	for k, v := range attrs {
		dst = appendKey(dst, open, k)
		dst = appendValue(dst, v)
	}
	return append(dst, '}')
}

// appendValue writes v as the JSON value of its type: bytes as base64, non-finite doubles as strings (JSON has
// no NaN), an empty value as null.
func appendValue(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendString(dst, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return appendString(dst, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(dst, v.Bool())
	case pcommon.ValueTypeBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes().AsRaw())
		return append(dst, '"')
	case pcommon.ValueTypeMap:
		dst = append(dst, '{')
		i := 0
		for k, e := range v.Map().All() {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendValue(dst, e)
		}
		return append(dst, '}')
	case pcommon.ValueTypeSlice:
		dst = append(dst, '[')
		for i, e := range v.Slice().All() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, e)
		}
		return append(dst, ']')
	}
	return append(dst, "null"...)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json does, so that every
// line is valid JSON whatever a source sent; U+2028 and U+2029 are escaped for JavaScript readers.
// plain marks the bytes appendString copies as they are: printable ASCII other than '"' and '\\'. One table
// lookup per byte, as in encoding/json, instead of four comparisons.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
