// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/logsubset"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordparquet"
)

// Format values.
const (
	FormatNDJSON  = "ndjson"
	FormatParquet = "parquet"
)

// parquetContentType is the media type IANA registered for Parquet.
const parquetContentType = "application/vnd.apache.parquet"

// objectFormat turns the records of one partition into one object.
type objectFormat struct {
	ext             string
	contentType     string
	contentEncoding string // empty when none
	// encode returns the object holding the records at locs of ld, in buffers of buf, and the SHA-256 of the
	// records' JSON lines (recordjson), which names it: the same records get the same name in either format,
	// and only the records decide it, not the encoder's version or settings.
	encode func(buf *objectBuffers, ld plog.Logs, locs []logsubset.Location) ([]byte, [sha256.Size]byte, error)
}

// objectBuffers are reused for the objects of a batch, one after the other: each object is uploaded before
// the next is encoded.
type objectBuffers struct {
	lines []byte
	body  []byte
	file  bytes.Buffer
}

func newFormat(cfg *Config) (*objectFormat, error) {
	compression := cfg.S3Uploader.Compression
	switch cfg.Format {
	case FormatNDJSON:
		c, err := newCodec(compression)
		if err != nil {
			return nil, err
		}
		return &objectFormat{ext: c.ext, contentType: contentType, contentEncoding: c.contentEncoding,
			encode: func(buf *objectBuffers, ld plog.Logs, locs []logsubset.Location) ([]byte, [sha256.Size]byte, error) {
				buf.lines = buf.lines[:0]
				for _, l := range locs {
					buf.lines = appendLine(buf.lines, ld, l)
				}
				sum := sha256.Sum256(buf.lines)
				var err error
				buf.body, err = c.compress(buf.body[:0], buf.lines)
				return buf.body, sum, err
			}}, nil
	case FormatParquet:
		codec, err := recordparquet.Codec(compression)
		if err != nil {
			return nil, err
		}
		return &objectFormat{ext: ".parquet", contentType: parquetContentType,
			encode: func(buf *objectBuffers, ld plog.Logs, locs []logsubset.Location) ([]byte, [sha256.Size]byte, error) {
				buf.file.Reset()
				enc := recordparquet.NewEncoder(&buf.file, codec)
				h := sha256.New()
				for _, l := range locs {
					// One line at a time: only its hash is kept.
					buf.lines = appendLine(buf.lines[:0], ld, l)
					_, _ = h.Write(buf.lines)
					res, lr := record(ld, l)
					if err := enc.Write(res, lr); err != nil {
						return nil, [sha256.Size]byte{}, err
					}
				}
				var sum [sha256.Size]byte
				h.Sum(sum[:0])
				if err := enc.Close(); err != nil {
					return nil, sum, err
				}
				return buf.file.Bytes(), sum, nil
			}}, nil
	}
	return nil, fmt.Errorf("unknown format %q", cfg.Format)
}

// appendLine appends the JSON line of the record at l.
func appendLine(dst []byte, ld plog.Logs, l logsubset.Location) []byte {
	res, lr := record(ld, l)
	return append(recordjson.Append(dst, res, lr), '\n')
}

func record(ld plog.Logs, l logsubset.Location) (pcommon.Resource, plog.LogRecord) {
	rl := ld.ResourceLogs().At(l.RI)
	return rl.Resource(), rl.ScopeLogs().At(l.SI).LogRecords().At(l.LI)
}
