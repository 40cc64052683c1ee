// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
)

// timeField reads a time: an RFC 3339 string, or a number of seconds since 1970 (milli-, micro- or
// nanoseconds when it is too large for seconds of this era). Null counts as absent.
func timeField(field string, v []byte) (time.Time, error) {
	if len(v) == 0 || string(v) == "null" {
		return time.Time{}, nil
	}
	var t time.Time
	if s, ok := jsonscan.String(v); ok {
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
