// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeField(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{`"2024-05-06T07:08:09Z"`, utc("2024-05-06T07:08:09Z"), ""},
		{`"2024-05-06T09:08:09.123456789+02:00"`, utc("2024-05-06T07:08:09.123456789Z"), ""},
		{`1715000000`, utc("2024-05-06T12:53:20Z"), ""},
		{`1645018228.7589638`, utc("2022-02-16T13:30:28.7589638Z"), ""},
		{`1715000000123`, utc("2024-05-06T12:53:20.123Z"), ""},
		{`1715000000123.5`, utc("2024-05-06T12:53:20.1235Z"), ""},
		{`1715000000123456`, utc("2024-05-06T12:53:20.123456Z"), ""},
		{`1715000000123456789`, utc("2024-05-06T12:53:20.123456789Z"), ""},
		{`1.715e9`, utc("2024-05-06T12:53:20Z"), ""},
		{`null`, time.Time{}, ""},
		{`-1`, time.Time{}, `ts: "-1" is not a time in seconds or milliseconds since 1970`},
		{`1e400`, time.Time{}, `ts: "1e400" is not a time in seconds or milliseconds since 1970`},
		{`99999999999999999999`, time.Time{}, `ts: "99999999999999999999" is not a time in seconds or milliseconds since 1970`},
		{`"yesterday"`, time.Time{}, `ts: want an RFC 3339 time, got "yesterday"`},
		{`"0001-01-01T00:00:00Z"`, time.Time{}, ""},
		{`"1969-12-31T23:59:59Z"`, time.Time{}, `ts: "1969-12-31T23:59:59Z" is out of range (1970 to 2262)`},
		{`"2263-01-01T00:00:00Z"`, time.Time{}, `ts: "2263-01-01T00:00:00Z" is out of range (1970 to 2262)`},
		{`99999999999`, time.Time{}, `ts: "99999999999" is out of range (1970 to 2262)`},
		{`9223372036854775807`, utc("2262-04-11T23:47:16.854775807Z"), ""},
		{`true`, time.Time{}, "ts: want an RFC 3339 string or a number, got bool"},
	} {
		got, err := timeField("ts", []byte(tt.in))
		if tt.err != "" {
			require.EqualError(t, err, tt.err)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}
