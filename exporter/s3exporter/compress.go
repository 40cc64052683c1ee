// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// contentType is the media type of newline-delimited JSON.
const contentType = "application/x-ndjson"

// codec compresses whole objects. Its output depends only on its input (no timestamps or file names in the
// gzip header, a single-threaded zstd encoder), so a retried upload sends the same bytes as the first.
type codec struct {
	// ext is the file extension of an object, ".jsonl" plus the compression's own.
	ext string
	// contentEncoding is the Content-Encoding of an object; empty when uncompressed.
	contentEncoding string
	compress        func(dst, src []byte) ([]byte, error)
}

func newCodec(compression string) (*codec, error) {
	switch compression {
	case CompressionNone:
		return &codec{ext: ".jsonl", compress: func(dst, src []byte) ([]byte, error) {
			return append(dst, src...), nil
		}}, nil
	case CompressionGzip:
		return &codec{ext: ".jsonl.gz", contentEncoding: "gzip", compress: gzipCompress}, nil
	case CompressionZstd:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			return nil, err
		}
		// EncodeAll may be called concurrently: the queue's consumers share one encoder.
		return &codec{ext: ".jsonl.zst", contentEncoding: "zstd", compress: func(dst, src []byte) ([]byte, error) {
			return enc.EncodeAll(src, dst), nil
		}}, nil
	}
	return nil, fmt.Errorf("unknown compression %q", compression)
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return w
}}

func gzipCompress(dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
