// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package recordparquet // import "github.com/otelcol-policy/otelcol-policy/pkg/recordparquet"

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/gzip"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

// Compressions of the pages, by name.
const (
	CompressionZstd   = "zstd"
	CompressionSnappy = "snappy"
	CompressionGzip   = "gzip"
	CompressionNone   = "none"
)

// Codec returns the page compression of a name, or an error naming the choices.
func Codec(name string) (compress.Codec, error) {
	switch name {
	case CompressionZstd:
		// Zstandard's level 7 or so rather than its default 3: at the default, klauspost's encoder leaves a page
		// without repeats (the hexadecimal result keys) as it is, where this level halves it; files are written
		// once and read many times. One goroutine per page: the exporter's queue consumers are the parallelism.
		return &zstd.Codec{Level: zstd.SpeedBetterCompression, Concurrency: 1}, nil
	case CompressionSnappy:
		return &snappy.Codec{}, nil
	case CompressionGzip:
		return &gzip.Codec{Level: gzip.DefaultCompression}, nil
	case CompressionNone:
		return &uncompressed.Codec{}, nil
	}
	return nil, fmt.Errorf("unknown Parquet compression %q: want zstd, snappy, gzip or none", name)
}

// dictionaryMaxBytes bounds a column's dictionary, as parquet-mr's default dictionary page size does: a column
// with more distinct values than fit (a hostile or unusual batch) goes on in plain encoding, so the dictionary
// never holds more than this per column.
const dictionaryMaxBytes = 1 << 20

// Encoder writes records as the rows of one Parquet file at a time, all in one row group: an object of the s3
// exporter is one batch's partition, which query engines read best as one row group. It buffers the row
// group's values until Close, so its memory is about the size of the records' values (less where dictionaries
// apply), plus the compressed pages. An Encoder is not safe for concurrent use, and writes one file: a
// parquet.Writer reset for the next file keeps some of its columns' state (a dictionary given up for plain
// encoding), so the same records would not always give the same bytes.
type Encoder struct {
	w *parquet.GenericWriter[any]
	// The current row, reused: values holds its numbers, text the bytes of its strings and JSON (which the
	// writer copies), spans where each string is in text.
	row    parquet.Row
	values []parquet.Value
	text   []byte
	spans  []span
}

// span is a column's value in Encoder.text; start < 0 is none.
type span struct{ start, end int }

// NewEncoder returns an Encoder writing to w with the given page compression (Codec).
func NewEncoder(w io.Writer, codec compress.Codec) *Encoder {
	return &Encoder{
		w: parquet.NewGenericWriter[any](w, schema,
			parquet.Compression(codec),
			// Version 1 data pages: version 2 pages are not read by every engine (older Hive and Athena).
			parquet.DataPageVersion(1),
			parquet.DictionaryMaxBytes(dictionaryMaxBytes),
			// Bounds of JSON text help no query, and would be stored uncompressed: a page's smallest and largest
			// value in its header (twice: the deprecated fields too), the file's in the footer. An 8 MiB body was
			// stored four times over.
			parquet.SkipPageBounds(ColumnAttributes),
			parquet.SkipPageBounds(ColumnBody),
			parquet.SkipPageStatistics(ColumnAttributes),
			parquet.SkipPageStatistics(ColumnBody),
		),
		row:    make(parquet.Row, numColumns),
		values: make([]parquet.Value, numColumns),
		spans:  make([]span, numColumns),
	}
}

// Close writes the row group and the file's footer.
func (e *Encoder) Close() error { return e.w.Close() }

// Write appends lr, with the attributes of its resource, as one row. Each attribute of attrColumns whose value
// has the column's type (a string of at most maxColumnValueBytes) goes into its column; every other attribute (policyresult.AllAttributes: a record
// attribute hides a resource attribute of the same name) into the attributes column, as recordjson writes it.
func (e *Encoder) Write(res pcommon.Resource, lr plog.LogRecord) error {
	e.text = e.text[:0]
	clear(e.values)
	for i := range e.spans {
		e.spans[i] = span{-1, -1}
	}
	if ts := lr.Timestamp(); ts != 0 {
		e.values[colTime] = parquet.Int64Value(micros(ts))
	}
	if ts := lr.ObservedTimestamp(); ts != 0 {
		e.values[colObservedTime] = parquet.Int64Value(micros(ts))
	}
	if n := lr.SeverityNumber(); n != plog.SeverityNumberUnspecified {
		e.values[colSeverityNumber] = parquet.Int32Value(int32(n))
	}
	if s := policyresult.EventName(lr); s != "" {
		e.addText(colEventName, s)
	}
	if s := lr.SeverityText(); s != "" {
		e.addText(colSeverityText, s)
	}
	if id := lr.TraceID(); !id.IsEmpty() {
		e.addText(colTraceID, id.String())
	}
	if id := lr.SpanID(); !id.IsEmpty() {
		e.addText(colSpanID, id.String())
	}

	rest := false
	for k, v := range policyresult.AllAttributes(res.Attributes(), lr.Attributes()) {
		c, ok := column(k, v)
		switch {
		case !ok:
			rest = true
		case v.Type() == pcommon.ValueTypeDouble:
			e.values[c] = parquet.DoubleValue(v.Double())
		default:
			e.addText(c, v.Str())
		}
	}
	if rest {
		start := len(e.text)
		e.text = recordjson.AppendObject(e.text, others(res.Attributes(), lr.Attributes()))
		e.spans[colAttributes] = span{start, len(e.text)}
	}
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		start := len(e.text)
		e.text = recordjson.AppendValue(e.text, body)
		e.spans[colBody] = span{start, len(e.text)}
	}

	// Text values are made once text is complete: appending to it may have moved it.
	for c, sp := range e.spans {
		v := e.values[c]
		if sp.start >= 0 {
			v = parquet.ByteArrayValue(e.text[sp.start:sp.end])
		}
		level := 1
		if v.IsNull() {
			level = 0
		}
		e.row[c] = v.Level(0, level, c)
	}
	_, err := e.w.WriteRows([]parquet.Row{e.row})
	return err
}

func (e *Encoder) addText(c int, s string) {
	start := len(e.text)
	e.text = append(e.text, s...)
	e.spans[c] = span{start, len(e.text)}
}

// column is the column of the attribute k with value v, when it has one and v is of its type (a string of at
// most maxColumnValueBytes).
func column(k string, v pcommon.Value) (int, bool) {
	i, ok := columnOf[k]
	if !ok {
		return 0, false
	}
	switch attrColumns[i].kind {
	case kindString:
		ok = v.Type() == pcommon.ValueTypeStr && len(v.Str()) <= maxColumnValueBytes
	case kindDouble:
		ok = v.Type() == pcommon.ValueTypeDouble
	}
	return firstAttrColumn + i, ok
}

// others yields the attributes that have no column for their value.
func others(res, attrs pcommon.Map) func(yield func(string, pcommon.Value) bool) {
	return func(yield func(string, pcommon.Value) bool) {
		for k, v := range policyresult.AllAttributes(res, attrs) {
			if _, ok := column(k, v); ok {
				continue
			}
			if !yield(k, v) {
				return
			}
		}
	}
}

// micros truncates a timestamp to microseconds since the epoch.
func micros(ts pcommon.Timestamp) int64 { return int64(ts / 1000) } //nolint:gosec // a uint64 of nanoseconds / 1000 fits an int64
