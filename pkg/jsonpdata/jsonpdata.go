// Package jsonpdata converts JSON documents into pdata values for log record bodies, keeping integers as
// integers (encoding/json alone would turn every number into a float, so a count of 3 would read 3.0 and a
// timestamp in seconds would lose precision).
//
// It parses straight into pdata instead of going through encoding/json's map[string]any: a decision event's
// body is converted for every decision, and the intermediate maps cost several times the parse itself.
package jsonpdata // import "github.com/otelcol-policy/otelcol-policy/pkg/jsonpdata"

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// SetValue decodes one JSON document into dest. Numbers that are integers in int64 range become Int, other
// numbers Double, numbers beyond float64 the string as written; duplicate keys keep the last value, as
// encoding/json does.
func SetValue(raw []byte, dest pcommon.Value) error {
	p := parser{d: raw}
	p.space()
	if err := p.value(dest, 0); err != nil {
		return err
	}
	p.space()
	if p.i != len(p.d) {
		return fmt.Errorf("unexpected data after the JSON value at byte %d", p.i)
	}
	return nil
}

type parser struct {
	d []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.i, fmt.Sprintf(format, a...))
}

func (p *parser) value(dest pcommon.Value, depth int) error {
	if p.i >= len(p.d) {
		return p.errorf("unexpected end of input")
	}
	switch c := p.d[p.i]; {
	case c == '{':
		if depth >= maxDepth {
			return p.errorf("nested too deeply")
		}
		return p.object(dest.SetEmptyMap(), depth+1)
	case c == '[':
		if depth >= maxDepth {
			return p.errorf("nested too deeply")
		}
		return p.array(dest.SetEmptySlice(), depth+1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		dest.SetStr(s)
	case c == 't':
		return p.literal("true", func() { dest.SetBool(true) })
	case c == 'f':
		return p.literal("false", func() { dest.SetBool(false) })
	case c == 'n':
		return p.literal("null", func() {})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(dest)
	default:
		return p.errorf("unexpected %q", c)
	}
	return nil
}

func (p *parser) literal(word string, set func()) error {
	if len(p.d)-p.i < len(word) || string(p.d[p.i:p.i+len(word)]) != word {
		return p.errorf("want %s", word)
	}
	p.i += len(word)
	set()
	return nil
}

func (p *parser) object(m pcommon.Map, depth int) error {
	p.i++ // {
	p.space()
	if p.i < len(p.d) && p.d[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.space()
		if p.i >= len(p.d) || p.d[p.i] != '"' {
			return p.errorf("want an object key")
		}
		k, err := p.str()
		if err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.d) || p.d[p.i] != ':' {
			return p.errorf("want ':'")
		}
		p.i++
		p.space()
		if err := p.value(m.PutEmpty(k), depth); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.d) {
			return p.errorf("unexpected end of input")
		}
		switch p.d[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.errorf("want ',' or '}'")
		}
	}
}

func (p *parser) array(s pcommon.Slice, depth int) error {
	p.i++ // [
	p.space()
	if p.i < len(p.d) && p.d[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		p.space()
		if err := p.value(s.AppendEmpty(), depth); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.d) {
			return p.errorf("unexpected end of input")
		}
		switch p.d[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.errorf("want ',' or ']'")
		}
	}
}

// str reads a string; escaped strings, rare in events, are left to encoding/json for exact JSON semantics.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // opening quote
	escaped := false
	for p.i < len(p.d) {
		switch c := p.d[p.i]; {
		case c == '"':
			p.i++
			raw := p.d[start+1 : p.i-1]
			if escaped || !utf8.Valid(raw) {
				var s string
				if err := json.Unmarshal(p.d[start:p.i], &s); err != nil {
					return "", fmt.Errorf("invalid JSON string at byte %d: %w", start, err)
				}
				return s, nil
			}
			return string(raw), nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", p.errorf("control character in string")
		default:
			p.i++
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) number(dest pcommon.Value) error {
	start := p.i
	integer := true
	if p.d[p.i] == '-' {
		p.i++
	}
	for p.i < len(p.d) {
		c := p.d[p.i]
		if c >= '0' && c <= '9' {
			p.i++
			continue
		}
		if c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			integer = false
			p.i++
			continue
		}
		break
	}
	lit := p.d[start:p.i]
	if !json.Valid(lit) {
		return fmt.Errorf("invalid JSON number %q at byte %d", lit, start)
	}
	if integer {
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			dest.SetInt(n)
			return nil
		}
	}
	if f, err := strconv.ParseFloat(string(lit), 64); err == nil {
		dest.SetDouble(f)
		return nil
	}
	dest.SetStr(string(lit))
	return nil
}
