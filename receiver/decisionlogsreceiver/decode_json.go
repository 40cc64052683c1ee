package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The decoders read events with this small scanner rather than encoding/json: decoding a 1.6 KB OPA event into
// a struct with encoding/json takes about 21 µs, more than the 20 µs per decision and core that 100,000
// decisions/s on two cores allow, and most of it goes into the input, which a decoder only has to cut out. The
// scanner validates an event once, accepting exactly what json.Valid accepts (the fuzz tests hold it to that),
// records where the top-level members are, and the decoders then read only the few values a decision needs.

// jsonMaxDepth is encoding/json's nesting limit, so that both agree on what is valid.
const jsonMaxDepth = 10000

// jsonStackMembers is how many top-level members a decoder scans without allocating; OPA events have about a
// dozen, Gatekeeper messages about twenty.
const jsonStackMembers = 32

// jsonMember is one member of an object: the key as written (without quotes) and the value's bytes.
type jsonMember struct {
	key []byte
	// esc says the key has escapes, which must be undone before it is compared.
	esc bool
	// start and end delimit the member, from the key's opening quote to the end of the value, in the object.
	start, end int
	value      []byte
}

// name is the key with escapes undone, so that "\u0069nput" is recognised as input.
func (m *jsonMember) name() []byte {
	if !m.esc {
		return m.key
	}
	return []byte(jsonUnquote(m.key))
}

// jsonMembers are the members of a validated top-level object, in order. They are kept apart from the
// object's bytes, which bodies are cut from, so that escape analysis can keep them on the decoder's stack.
type jsonMembers []jsonMember

// lookup returns the value of the last member named key, as encoding/json would.
func (ms jsonMembers) lookup(key string) ([]byte, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].name()) == key {
			return ms[i].value, true
		}
	}
	return nil, false
}

// jsonSyntaxError locates invalid JSON.
type jsonSyntaxError struct {
	off int
	msg string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg)
}

func jsonEOF(off int) error { return &jsonSyntaxError{off, "unexpected end of input"} }

func jsonBadChar(off int, c byte, where string) error {
	return &jsonSyntaxError{off, fmt.Sprintf("invalid character %q %s", c, where)}
}

// scanJSONEvent validates raw as one JSON object and returns it without surrounding space, and its members,
// listed into buf, which callers keep on their stack for the common case of a few dozen members.
func scanJSONEvent(raw []byte, buf jsonMembers) ([]byte, jsonMembers, error) {
	i := skipJSONSpace(raw, 0)
	end := len(raw)
	for end > i && isJSONSpace(raw[end-1]) {
		end--
	}
	if i == end {
		return nil, nil, fmt.Errorf("want a JSON object, got empty input")
	}
	var j int
	var err error
	if raw[i] != '{' {
		// Whatever it is, say so precisely: a valid array is "got array", a broken one a syntax error.
		if j, err = scanJSONValue(raw, i, 0); err != nil {
			return nil, nil, err
		}
		if j = skipJSONSpace(raw, j); j < end {
			return nil, nil, jsonBadChar(j, raw[j], "after top-level value")
		}
		return nil, nil, fmt.Errorf("want a JSON object, got %s", jsonType(raw[i:end]))
	}
	obj := raw[i:end]
	ms := buf
	if j, ms, err = scanJSONTop(obj, ms); err != nil {
		err.(*jsonSyntaxError).off += i
		return nil, nil, err
	}
	if j = skipJSONSpace(obj, j); j < len(obj) {
		return nil, nil, jsonBadChar(i+j, obj[j], "after top-level value")
	}
	return obj, ms, nil
}

// scanJSONTop is scanJSONContainer for the top-level object, listing its members; it is apart so that the hot
// recursion does not carry the list through every level.
func scanJSONTop(d []byte, ms jsonMembers) (int, jsonMembers, error) {
	j := skipJSONSpace(d, 1)
	if j < len(d) && d[j] == '}' {
		return j + 1, ms, nil
	}
	for {
		kend, esc, vstart, err := scanJSONKey(d, j)
		if err != nil {
			return 0, nil, err
		}
		vend, err := scanJSONValue(d, vstart, 1)
		if err != nil {
			return 0, nil, err
		}
		ms = append(ms, jsonMember{key: d[j+1 : kend-1], esc: esc, start: j, end: vend, value: d[vstart:vend]})
		var more bool
		if j, more, err = scanJSONAfter(d, vend, '}'); err != nil || !more {
			return j, ms, err
		}
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipJSONSpace(d []byte, i int) int {
	for i < len(d) && isJSONSpace(d[i]) {
		i++
	}
	return i
}

// scanJSONValue validates the value at d[i] (no leading space) inside depth enclosing containers and returns
// its end.
func scanJSONValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return i, jsonEOF(i)
	}
	switch c := d[i]; {
	case c == '{' || c == '[':
		return scanJSONContainer(d, i, depth+1)
	case c == '"':
		end, _, err := scanJSONString(d, i)
		return end, err
	case c == 't':
		return scanJSONLiteral(d, i, "true")
	case c == 'f':
		return scanJSONLiteral(d, i, "false")
	case c == 'n':
		return scanJSONLiteral(d, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return scanJSONNumber(d, i)
	default:
		return i, jsonBadChar(i, c, "looking for beginning of value")
	}
}

// scanJSONContainer validates the object or array at d[i], at nesting depth depth.
func scanJSONContainer(d []byte, i, depth int) (int, error) {
	if depth > jsonMaxDepth {
		return i, &jsonSyntaxError{i, "exceeded max depth"}
	}
	object := d[i] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	j := skipJSONSpace(d, i+1)
	if j < len(d) && d[j] == closer {
		return j + 1, nil
	}
	for {
		vstart := j
		if object {
			var err error
			if _, _, vstart, err = scanJSONKey(d, j); err != nil {
				return 0, err
			}
		}
		vend, err := scanJSONValue(d, vstart, depth)
		if err != nil {
			return vend, err
		}
		var more bool
		if j, more, err = scanJSONAfter(d, vend, closer); err != nil || !more {
			return j, err
		}
	}
}

// scanJSONKey validates the key at d[j] and the colon after it; it returns the key's end, whether the key has
// escapes, and where the value starts.
func scanJSONKey(d []byte, j int) (kend int, esc bool, vstart int, err error) {
	if j >= len(d) {
		return 0, false, 0, jsonEOF(j)
	}
	if d[j] != '"' {
		return 0, false, 0, jsonBadChar(j, d[j], "looking for beginning of object key string")
	}
	if kend, esc, err = scanJSONString(d, j); err != nil {
		return 0, false, 0, err
	}
	if j = skipJSONSpace(d, kend); j >= len(d) {
		return 0, false, 0, jsonEOF(j)
	}
	if d[j] != ':' {
		return 0, false, 0, jsonBadChar(j, d[j], "after object key")
	}
	return kend, esc, skipJSONSpace(d, j+1), nil
}

// scanJSONAfter validates what follows the member or element ending at d[vend]: a comma, and then it returns
// where the next one starts and true, or the closer, and then it returns the container's end.
func scanJSONAfter(d []byte, vend int, closer byte) (int, bool, error) {
	j := skipJSONSpace(d, vend)
	if j >= len(d) {
		return j, false, jsonEOF(j)
	}
	switch d[j] {
	case closer:
		return j + 1, false, nil
	case ',':
		return skipJSONSpace(d, j+1), true, nil
	}
	if closer == '}' {
		return j, false, jsonBadChar(j, d[j], "after object key:value pair")
	}
	return j, false, jsonBadChar(j, d[j], "after array element")
}

// Strings are where events spend their bytes, so they are crossed 8 bytes at a time: jsonStringStops returns
// a mask with the high bit set in the bytes of w that are a quote, a backslash or (with controls) a control
// character. (x - 0x01…) &^ x & 0x80… flags the zero bytes of x, (x - 0x20…) &^ x & 0x80… those below 0x20; a
// borrow can flag a byte above a true one, never below, so the lowest flag is always right.
func jsonStringStops(w uint64, controls bool) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	m := (quote-ones)&^quote | (backslash-ones)&^backslash
	if controls {
		m |= (w - ones*0x20) &^ w
	}
	return m & highs
}

// nextJSONStringStop returns the offset of the first byte from j on that jsonStringStops flags, or len(d).
func nextJSONStringStop(d []byte, j int, controls bool) int {
	for ; j+8 <= len(d); j += 8 {
		if m := jsonStringStops(binary.LittleEndian.Uint64(d[j:]), controls); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(d); j++ {
		if c := d[j]; c == '"' || c == '\\' || (controls && c < 0x20) {
			return j
		}
	}
	return j
}

// scanJSONString validates the string whose opening quote is at d[i], returns its end and whether it has
// escapes. Like encoding/json it does not check UTF-8: invalid sequences are valid JSON and decode to U+FFFD.
func scanJSONString(d []byte, i int) (int, bool, error) {
	esc := false
	j := i + 1
	for {
		if j = nextJSONStringStop(d, j, true); j >= len(d) {
			return j, esc, jsonEOF(j)
		}
		switch c := d[j]; c {
		case '"':
			return j + 1, esc, nil
		case '\\':
			esc = true
			if j+1 >= len(d) {
				return j + 1, esc, jsonEOF(j + 1)
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(d) {
						return k, esc, jsonEOF(k)
					}
					if unhex(d[k]) < 0 {
						return k, esc, jsonBadChar(k, d[k], "in \\u hexadecimal character escape")
					}
				}
				j += 6
			default:
				return j + 1, esc, jsonBadChar(j+1, d[j+1], "in string escape code")
			}
		default:
			return j, esc, jsonBadChar(j, c, "in string literal")
		}
	}
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

func scanJSONLiteral(d []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(d) {
			return i + k, jsonEOF(i + k)
		}
		if d[i+k] != lit[k] {
			return i + k, jsonBadChar(i+k, d[i+k], "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

func scanJSONNumber(d []byte, i int) (int, error) {
	j := i
	if d[j] == '-' {
		j++
	}
	digits := func(at int) (int, error) {
		if at >= len(d) {
			return at, jsonEOF(at)
		}
		if d[at] < '0' || d[at] > '9' {
			return at, jsonBadChar(at, d[at], "in numeric literal")
		}
		for at < len(d) && d[at] >= '0' && d[at] <= '9' {
			at++
		}
		return at, nil
	}
	if j < len(d) && d[j] == '0' {
		j++
	} else {
		var err error
		if j, err = digits(j); err != nil {
			return j, err
		}
	}
	if j < len(d) && d[j] == '.' {
		var err error
		if j, err = digits(j + 1); err != nil {
			return j, err
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		return digits(j)
	}
	return j, nil
}

// jsonType names the type of a value by its first byte, for error messages.
func jsonType(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}
