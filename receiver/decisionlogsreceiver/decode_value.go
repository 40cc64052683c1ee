package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// errNotDecision marks events that are well formed but are no decision, such as Gatekeeper's audit_started or
// constraint_audited log lines, so that a caller tailing a mixed log can skip them instead of counting them as
// malformed.
var errNotDecision = errors.New("not a decision event")

// notDecisionError is an errNotDecision with a message of its own.
type notDecisionError string

func (e notDecisionError) Error() string      { return string(e) }
func (notDecisionError) Is(target error) bool { return target == errNotDecision }

// jsonString decodes v if it is a JSON string.
func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	for i, c := range in {
		if c == '\\' || c >= utf8.RuneSelf {
			if c != '\\' && bytes.IndexByte(in[i:], '\\') < 0 && utf8.Valid(in[i:]) {
				break
			}
			return jsonUnquote(in), true
		}
	}
	return string(in), true
}

// jsonUnquote decodes the contents of a validated JSON string as encoding/json does: escapes undone, invalid
// UTF-8 and unpaired surrogates replaced by U+FFFD, since record attributes must be valid UTF-8.
func jsonUnquote(in []byte) string {
	b := make([]byte, 0, len(in))
	for r := 0; r < len(in); {
		c := in[r]
		switch {
		case c == '\\' && r+1 < len(in):
			switch e := in[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(in[r:])
				if rr < 0 {
					return string(b)
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(in[r:])); dec != unicode.ReplacementChar {
						b = utf8.AppendRune(b, dec)
						r += 6
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(in[r:])
			if rr == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
			} else {
				b = append(b, in[r:r+size]...)
			}
			r += size
		}
	}
	return string(b)
}

// getu4 decodes the \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		h := unhex(c)
		if h < 0 {
			return -1
		}
		r = r*16 + h
	}
	return r
}

// jsonBool reads v if it is true or false.
func jsonBool(v []byte) (value, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// jsonStrings reads v if it is an array of strings only.
func jsonStrings(v []byte) ([]string, bool) {
	c := jsonCursor{d: v}
	if !c.enter('[') {
		return nil, false
	}
	var out []string
	for c.next() {
		s, ok := jsonString(c.value())
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// fieldTypeError says what a field holds instead of what it should.
func fieldTypeError(field, want string, v []byte) error {
	return fmt.Errorf("%s: want %s, got %s", field, want, jsonType(v))
}

// stringField reads a field that must be a string; null counts as absent, as in encoding/json.
func stringField(field string, v []byte) (string, error) {
	if s, ok := jsonString(v); ok {
		return s, nil
	}
	if string(v) == "null" {
		return "", nil
	}
	return "", fieldTypeError(field, "a string", v)
}

// timeField reads a time: an RFC 3339 string, or a number of seconds since 1970 (milli-, micro- or
// nanoseconds when it is too large for seconds of this era). Null counts as absent.
func timeField(field string, v []byte) (time.Time, error) {
	if len(v) == 0 || string(v) == "null" {
		return time.Time{}, nil
	}
	var t time.Time
	if s, ok := jsonString(v); ok {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return time.Time{}, fmt.Errorf("%s: want an RFC 3339 time, got %s", field, quoteShort(s))
		}
		if t.IsZero() {
			// Go's zero time, which producers write for "unknown".
			return time.Time{}, nil
		}
	} else if v[0] == '-' || (v[0] >= '0' && v[0] <= '9') {
		if t, ok = epochTime(string(v)); !ok {
			return time.Time{}, fmt.Errorf("%s: %s is not a time in seconds or milliseconds since 1970", field, quoteShort(string(v)))
		}
	} else {
		return time.Time{}, fieldTypeError(field, "an RFC 3339 string or a number", v)
	}
	if !recordTime(t) {
		return time.Time{}, fmt.Errorf("%s: %s is out of range (1970 to 2262)", field, quoteShort(strings.Trim(string(v), `"`)))
	}
	return t.UTC(), nil
}

// recordTime tells whether t fits a record timestamp: nanoseconds since 1970 in 64 bits.
func recordTime(t time.Time) bool {
	return !t.Before(time.Unix(0, 0)) && !t.After(time.Unix(0, math.MaxInt64))
}

// epochTime reads a JSON number as a time since 1970. Decimal fractions are read exactly, so that
// Gatekeeper's float seconds keep their nanoseconds.
func epochTime(num string) (time.Time, bool) {
	if strings.ContainsAny(num, "eE") {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return time.Time{}, false
		}
		num = strconv.FormatFloat(f, 'f', -1, 64)
	}
	whole, frac, _ := strings.Cut(num, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n < 0 || whole[0] == '-' {
		return time.Time{}, false
	}
	// The unit is the one that puts the time after 1973 and before 5138: seconds are below 1e11.
	var digits int // below the second, in n
	switch {
	case n < 1e11:
	case n < 1e14:
		digits = 3
	case n < 1e17:
		digits = 6
	default:
		digits = 9
	}
	var nanos int64
	for i := range 9 - digits {
		d := int64(0)
		if i < len(frac) {
			d = int64(frac[i] - '0')
		}
		nanos = nanos*10 + d
	}
	scale := int64(1)
	for range digits {
		scale *= 10
	}
	sub := n % scale
	for range 9 - digits {
		sub *= 10
	}
	return time.Unix(n/scale, sub+nanos).UTC(), true
}

// quoteShort quotes s for an error message, cut so that a huge field cannot make a huge log line.
func quoteShort(s string) string {
	const maxLen = 64
	if len(s) > maxLen {
		return strconv.Quote(s[:maxLen]) + "…"
	}
	return strconv.Quote(s)
}

// joinAPIVersion joins a group and a version as Kubernetes writes apiVersion: the core group has none.
func joinAPIVersion(group, version string) string {
	if group == "" || version == "" || strings.Contains(version, "/") {
		return version
	}
	return group + "/" + version
}

// decisionIDVersion is hashed first, so that a change of the fields yields new IDs instead of colliding with
// old ones.
const decisionIDVersion = "decisionlogs/v1"

// contentID derives an ID from what identifies an event, for events that carry no unique ID of their own: the
// same event delivered twice gets the same ID, so that at-least-once delivery can be deduplicated downstream.
// Fields are length-prefixed, so that ("ab", "c") and ("a", "bc") differ. 32 hex digits: 128 bits of SHA-256.
func contentID(fields ...string) string {
	var buf [512]byte
	b := appendIDField(buf[:0], decisionIDVersion)
	for _, f := range fields {
		b = appendIDField(b, f)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func appendIDField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
