// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordparquet"
)

// NullPartition is the value of an attribute partition when the record has no such attribute or an empty one.
// It is Hive's name for a NULL partition value, which Athena, Hive and Spark read back as NULL.
const NullPartition = "__HIVE_DEFAULT_PARTITION__"

// keyHashLen is the number of hex digits of the content hash in a key: 128 bits, so two different batches
// never share a name in practice.
const keyHashLen = 32

// Limits every key is kept within, whatever the records hold: S3's longest key, and the longest path segment
// of the stores that keep a key's segments as file or directory names (MinIO, and the tools that mirror a
// bucket to disk) and of most file systems.
const (
	maxKeyBytes     = 1024
	maxSegmentBytes = 255
	// maxExtLen is the longest object name extension, ".jsonl.zst" (".parquet" is shorter).
	maxExtLen = len(".jsonl.zst")
)

// A partition value longer than partition_value_max_bytes is shortened: a prefix of its encoding, "~" and
// shortHashLen hex digits (64 bits) of the SHA-256 of the whole value.
const (
	shortHashLen           = 16
	shortenedSuffixLen     = 1 + shortHashLen
	minPartitionValueBytes = 32
)

// partitionFormat is a parsed s3_partition_format: literal text and strftime directives.
type partitionFormat []formatToken

type formatToken struct {
	literal   string
	directive byte
}

// parsePartitionFormat accepts the strftime directives that make sense in a path: %Y %y %m %d %H %M %S %j %F
// and %%. It rejects formats whose output would have an empty, "." or ".." path segment, since S3 keeps those
// literally while query engines and tools that map keys to paths do not.
func parsePartitionFormat(s string) (partitionFormat, error) {
	if s == "" {
		return nil, errors.New("must not be empty")
	}
	var f partitionFormat
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, fmt.Errorf("%q ends with a lone %%", s)
		}
		i++
		switch d := s[i]; d {
		case '%':
			lit.WriteByte('%')
		case 'Y', 'y', 'm', 'd', 'H', 'M', 'S', 'j', 'F':
			if lit.Len() > 0 {
				f = append(f, formatToken{literal: lit.String()})
				lit.Reset()
			}
			f = append(f, formatToken{directive: d})
		default:
			return nil, fmt.Errorf("%q: unsupported directive %%%c (use %%Y %%y %%m %%d %%H %%M %%S %%j %%F %%%%)", s, d)
		}
	}
	if lit.Len() > 0 {
		f = append(f, formatToken{literal: lit.String()})
	}
	// Directives expand to digits and dashes only, so one sample shows every path segment the format can give.
	sample := string(f.append(nil, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	for seg := range strings.SplitSeq(sample, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return nil, fmt.Errorf("%q gives paths such as %q, with an empty, \".\" or \"..\" segment", s, sample)
		}
	}
	return f, nil
}

func (f partitionFormat) append(dst []byte, t time.Time) []byte {
	for _, tok := range f {
		if tok.directive == 0 {
			dst = append(dst, tok.literal...)
			continue
		}
		switch tok.directive {
		case 'Y':
			dst = appendInt(dst, t.Year(), 4)
		case 'y':
			dst = appendInt(dst, t.Year()%100, 2)
		case 'm':
			dst = appendInt(dst, int(t.Month()), 2)
		case 'd':
			dst = appendInt(dst, t.Day(), 2)
		case 'H':
			dst = appendInt(dst, t.Hour(), 2)
		case 'M':
			dst = appendInt(dst, t.Minute(), 2)
		case 'S':
			dst = appendInt(dst, t.Second(), 2)
		case 'j':
			dst = appendInt(dst, t.YearDay(), 3)
		case 'F':
			dst = appendInt(dst, t.Year(), 4)
			dst = append(dst, '-')
			dst = appendInt(dst, int(t.Month()), 2)
			dst = append(dst, '-')
			dst = appendInt(dst, t.Day(), 2)
		}
	}
	return dst
}

func appendInt(dst []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// partitionName turns an attribute name into a partition column name the engines accept unquoted: lower case
// letters, digits and underscores (k8s.cluster.name becomes k8s_cluster_name). It is the attribute's column in
// Parquet objects, so that a partition and the column holding the same value share a name.
func partitionName(attr string) string { return recordparquet.ColumnName(attr) }

// appendPartitionValue appends v as an attribute partition's value of at most max bytes. It percent-encodes
// every byte but letters, digits and "-._", so that a value can neither add a path segment ("/") nor be
// mistaken for the name separator ("="), and holds only characters that are safe in keys; Hive, Spark and
// DuckDB decode it. An encoding longer than max is shortened to at most its first max−17 bytes (never cutting
// an escape or a UTF-8 character), "~" and the first 16 hex digits of the SHA-256 of v: two values that share a
// long prefix stay apart, and "~", which the encoding never keeps, tells a shortened value. shortened reports
// that.
func appendPartitionValue(dst []byte, v string, max int) (out []byte, shortened bool) {
	if v == "" {
		return append(dst, NullPartition...), false
	}
	const hexDigits = "0123456789ABCDEF"
	start := len(dst)
	limit := start + max - shortenedSuffixLen
	cut := start // the end of the last whole character within limit
	// Encoding stops once the value is too long: the rest of it is only hashed.
	for i := 0; i < len(v) && len(dst)-start <= max; {
		_, size := utf8.DecodeRuneInString(v[i:]) // 1 for a byte that is not UTF-8
		for ; size > 0; size-- {
			c := v[i]
			i++
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' {
				dst = append(dst, c)
			} else {
				dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&0xf])
			}
		}
		if len(dst) <= limit {
			cut = len(dst)
		}
	}
	if len(dst)-start <= max {
		return dst, false
	}
	h := sha256.New()
	_, _ = io.WriteString(h, v)
	var sum [sha256.Size]byte
	dst = append(dst[:cut], '~')
	return hex.AppendEncode(dst, h.Sum(sum[:0])[:shortHashLen/2]), true
}

// validateKeyLength makes every key valid by construction: with partition values at most
// partition_value_max_bytes long, no path segment is longer than maxSegmentBytes and no key longer than
// maxKeyBytes, whatever the records hold.
func (c *Config) validateKeyLength() error {
	f, err := parsePartitionFormat(c.S3Uploader.S3PartitionFormat)
	if err != nil {
		return nil // reported on its own
	}
	var errs []error
	longSegment := func(what, seg string, n int) {
		if n > maxSegmentBytes {
			errs = append(errs, fmt.Errorf("%s gives key path segments such as %q of %d bytes, more than %d (stores keeping a key's segments as file names refuse them)",
				what, seg, n, maxSegmentBytes))
		}
	}
	total := 0
	if p := strings.Trim(c.S3Uploader.S3Prefix, "/"); p != "" {
		total += len(p) + 1
		for seg := range strings.SplitSeq(p, "/") {
			longSegment("s3uploader::s3_prefix", seg[:min(len(seg), 32)]+"…", len(seg))
		}
	}
	for _, a := range c.PartitionAttributes {
		n := len(partitionName(a)) + 1 + c.PartitionValueMaxBytes
		longSegment(fmt.Sprintf("partition_attributes %q with partition_value_max_bytes %d", a, c.PartitionValueMaxBytes),
			partitionName(a)+"=…", n)
		total += n + 1
	}
	sample := string(f.append(nil, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	for seg := range strings.SplitSeq(sample, "/") {
		longSegment("s3uploader::s3_partition_format", seg[:min(len(seg), 32)]+"…", len(seg))
	}
	total += len(sample) + 1 + keyHashLen + maxExtLen
	if total > maxKeyBytes {
		errs = append(errs, fmt.Errorf("keys can be %d bytes long with these s3uploader::s3_prefix, partition_attributes, partition_value_max_bytes and s3uploader::s3_partition_format, more than S3's %d: shorten one",
			total, maxKeyBytes))
	}
	return errors.Join(errs...)
}

// keyLayout derives the partition of a record and the key of an object.
type keyLayout struct {
	// prefix is s3_prefix without its outer slashes, followed by "/" unless empty.
	prefix     string
	timeFormat partitionFormat
	attrs      []partitionAttr
	maxValue   int
	ext        string
}

type partitionAttr struct {
	attr string
	name string
}

func newKeyLayout(cfg *Config, ext string) (*keyLayout, error) {
	f, err := parsePartitionFormat(cfg.S3Uploader.S3PartitionFormat)
	if err != nil {
		return nil, err
	}
	l := &keyLayout{timeFormat: f, maxValue: cfg.PartitionValueMaxBytes, ext: ext}
	if p := strings.Trim(cfg.S3Uploader.S3Prefix, "/"); p != "" {
		l.prefix = p + "/"
	}
	for _, a := range cfg.PartitionAttributes {
		l.attrs = append(l.attrs, partitionAttr{attr: a, name: partitionName(a)})
	}
	return l, nil
}

// appendPartition appends the partition path of a record, without slashes around it. An attribute's value is
// the record's, else its resource's (policyresult.Lookup). The time is the record's timestamp, else its
// observed timestamp, in UTC; a record with neither lands in 1970, never in the time of the export, which
// would move a retried batch into another partition. shortened counts the values that were too long for a key.
func (l *keyLayout) appendPartition(dst []byte, res pcommon.Resource, lr plog.LogRecord) (path []byte, shortened int) {
	for _, a := range l.attrs {
		s := policyresult.LookupString(res.Attributes(), lr.Attributes(), a.attr)
		dst = append(dst, a.name...)
		dst = append(dst, '=')
		var short bool
		dst, short = appendPartitionValue(dst, s, l.maxValue)
		if short {
			shortened++
		}
		dst = append(dst, '/')
	}
	ts := lr.Timestamp()
	if ts == 0 {
		ts = lr.ObservedTimestamp()
	}
	return l.timeFormat.append(dst, ts.AsTime().UTC()), shortened
}

// key names the object of partition by the SHA-256 of its records' JSON lines (objectFormat.encode): a retried
// upload of the same batch overwrites its first attempt, whatever the format and the compressor's output.
func (l *keyLayout) key(partition string, sum [sha256.Size]byte) string {
	return l.prefix + partition + "/" + hex.EncodeToString(sum[:])[:keyHashLen] + l.ext
}
