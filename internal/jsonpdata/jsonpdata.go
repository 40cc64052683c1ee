// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package jsonpdata converts JSON documents into pdata values for log record bodies, keeping integers as
// integers (encoding/json alone would turn every number into a float, so a count of 3 would read 3.0 and a
// timestamp in seconds would lose precision).
//
// It parses straight into pdata instead of going through encoding/json's map[string]any: a decision event's
// body is converted for every decision, and the intermediate maps cost several times the parse itself. What is
// valid JSON, and what a JSON string decodes to, is jsonscan's to say.
package jsonpdata // import "github.com/otelcol-policy/otelcol-policy/internal/jsonpdata"

import (
	"bytes"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
)

// SetValue decodes one JSON document into dest. Numbers that are integers in int64 range become Int, other
// numbers Double, numbers beyond float64 the string as written; duplicate keys keep the last value, as
// encoding/json does.
func SetValue(raw []byte, dest pcommon.Value) error {
	p := parser{d: raw}
	i, err := p.value(jsonscan.SkipSpace(raw, 0), dest, 0)
	if err != nil {
		return err
	}
	if i = jsonscan.SkipSpace(raw, i); i != len(raw) {
		return &jsonscan.SyntaxError{Offset: i, Msg: "data after the top-level value"}
	}
	return nil
}

type parser struct {
	d []byte
}

// value sets dest to the value at d[i], inside depth enclosing containers, and returns its end.
func (p *parser) value(i int, dest pcommon.Value, depth int) (int, error) {
	d := p.d
	if i >= len(d) {
		return i, &jsonscan.SyntaxError{Offset: i, Msg: "unexpected end of input"}
	}
	switch c := d[i]; {
	case c == '{' || c == '[':
		if depth >= jsonscan.MaxDepth {
			return i, &jsonscan.SyntaxError{Offset: i, Msg: "exceeded max depth"}
		}
		if c == '{' {
			return p.object(i, dest.SetEmptyMap(), depth+1)
		}
		return p.array(i, dest.SetEmptySlice(), depth+1)
	case c == '"':
		s, end, err := p.str(i)
		if err == nil {
			dest.SetStr(s)
		}
		return end, err
	case c == 't' || c == 'f':
		lit := "true"
		if c == 'f' {
			lit = "false"
		}
		end, err := jsonscan.ScanLiteral(d, i, lit)
		if err == nil {
			dest.SetBool(c == 't')
		}
		return end, err
	case c == 'n':
		return jsonscan.ScanLiteral(d, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(i, dest)
	}
	// Whatever it is, let the scanner name it.
	return jsonscan.ScanValue(d, i, depth)
}

func (p *parser) str(i int) (string, int, error) {
	end, _, err := jsonscan.ScanString(p.d, i)
	if err != nil {
		return "", end, err
	}
	s, _ := jsonscan.String(p.d[i:end])
	return s, end, nil
}

func (p *parser) object(i int, m pcommon.Map, depth int) (int, error) {
	j := jsonscan.SkipSpace(p.d, i+1)
	if j < len(p.d) && p.d[j] == '}' {
		return j + 1, nil
	}
	for {
		kend, _, vstart, err := jsonscan.ScanKey(p.d, j)
		if err != nil {
			return kend, err
		}
		k, _ := jsonscan.String(p.d[j:kend])
		vend, err := p.value(vstart, m.PutEmpty(k), depth)
		if err != nil {
			return vend, err
		}
		var more bool
		if j, more, err = jsonscan.ScanAfter(p.d, vend, '}'); err != nil || !more {
			return j, err
		}
	}
}

func (p *parser) array(i int, s pcommon.Slice, depth int) (int, error) {
	j := jsonscan.SkipSpace(p.d, i+1)
	if j < len(p.d) && p.d[j] == ']' {
		return j + 1, nil
	}
	for {
		vend, err := p.value(j, s.AppendEmpty(), depth)
		if err != nil {
			return vend, err
		}
		var more bool
		if j, more, err = jsonscan.ScanAfter(p.d, vend, ']'); err != nil || !more {
			return j, err
		}
	}
}

func (p *parser) number(i int, dest pcommon.Value) (int, error) {
	end, err := jsonscan.ScanNumber(p.d, i)
	if err != nil {
		return end, err
	}
	lit := p.d[i:end]
	if !bytes.ContainsAny(lit, ".eE") {
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			dest.SetInt(n)
			return end, nil
		}
	}
	if f, err := strconv.ParseFloat(string(lit), 64); err == nil {
		dest.SetDouble(f)
		return end, nil
	}
	dest.SetStr(string(lit))
	return end, nil
}
