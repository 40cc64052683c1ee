// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package binenc

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestDecoderReadsWhatWasAppended(t *testing.T) {
	b := []byte{7}
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -5)
	b = policyresult.AppendFields(b, "ab", "")
	b = binary.AppendUvarint(b, 2)
	b = append(b, 1, 2)

	d := NewDecoder(b)
	assert.Equal(t, uint8(7), d.Byte())
	assert.Equal(t, uint64(300), d.Uvarint())
	assert.Equal(t, int64(-5), d.Varint())
	assert.Equal(t, "ab", string(d.Field()))
	assert.Empty(t, d.Field())
	assert.Equal(t, 2, d.Count(1))
	assert.Equal(t, []byte{1, 2}, d.Bytes(2))
	require.NoError(t, d.Err())
	assert.Zero(t, d.Len())
}

func TestDecoderBoundsEveryRead(t *testing.T) {
	for name, read := range map[string]func(d *Decoder){
		"byte":                   func(d *Decoder) { d.Byte() },
		"uvarint":                func(d *Decoder) { d.Uvarint() },
		"varint":                 func(d *Decoder) { d.Varint() },
		"bytes past the end":     func(d *Decoder) { d.Bytes(1 << 62) },
		"field past the end":     func(d *Decoder) { d.Field() },
		"count past what fits":   func(d *Decoder) { d.Count(16) },
		"count of a huge number": func(d *Decoder) { d.Count(1) },
	} {
		t.Run(name, func(t *testing.T) {
			b := binary.AppendUvarint(nil, 1<<60)
			if name == "byte" || name == "uvarint" || name == "varint" {
				b = nil
			}
			d := NewDecoder(b)
			read(d)
			require.Error(t, d.Err())
			// The first error sticks, and later reads return nothing.
			first := d.Err()
			assert.Zero(t, d.Byte())
			assert.Nil(t, d.Field())
			assert.Equal(t, first, d.Err())
		})
	}
}
