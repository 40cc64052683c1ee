// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package binenc reads the compact binary entries components keep in a storage extension: bytes, varints and
// length-prefixed fields (policyresult.AppendField). Every read is bounded by the bytes at hand, so that a
// truncated, corrupt or hostile entry is an error, never a panic or an allocation beyond the entry's own size.
package binenc // import "github.com/otelcol-policy/otelcol-policy/internal/binenc"

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTruncated is the error of a read past the end of the entry.
var ErrTruncated = errors.New("truncated entry")

// Decoder reads an entry from the front. The first error sticks: later reads return zero values, and Err
// returns it.
type Decoder struct {
	b   []byte
	err error
}

// NewDecoder reads b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error met, if any.
func (d *Decoder) Err() error { return d.err }

// Fail records err unless an error was met before.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Len is the number of bytes not read yet.
func (d *Decoder) Len() int { return len(d.b) }

// Byte reads one byte.
func (d *Decoder) Byte() uint8 {
	if d.err != nil || len(d.b) < 1 {
		d.Fail(ErrTruncated)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 { return readVarint(d, binary.Uvarint) }

// Varint reads a signed varint.
func (d *Decoder) Varint() int64 { return readVarint(d, binary.Varint) }

func readVarint[T uint64 | int64](d *Decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.Fail(ErrTruncated)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Bytes reads the next n bytes; they alias the entry.
func (d *Decoder) Bytes(n uint64) []byte {
	if d.err != nil || uint64(len(d.b)) < n {
		d.Fail(ErrTruncated)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// Field reads a length-prefixed field, as policyresult.AppendField wrote it; it aliases the entry.
func (d *Decoder) Field() []byte { return d.Bytes(d.Uvarint()) }

// Count reads the number of the items that follow, each of which takes at least minSize bytes (at least 1), and
// fails when the rest of the entry cannot hold that many: a count never makes its reader allocate more than
// the entry's size allows.
func (d *Decoder) Count(minSize int) int {
	n := d.Uvarint()
	if d.err == nil && n > uint64(len(d.b)/max(minSize, 1)) {
		d.Fail(fmt.Errorf("%d items of at least %d bytes in the %d bytes left", n, minSize, len(d.b)))
		return 0
	}
	return int(n) //nolint:gosec // G115: bounded by the entry's length
}
