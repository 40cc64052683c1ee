package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// NullPartition is the value of an attribute partition when the record has no such attribute or an empty one.
// It is Hive's name for a NULL partition value, which Athena, Hive and Spark read back as NULL.
const NullPartition = "__HIVE_DEFAULT_PARTITION__"

// keyHashLen is the number of hex digits of the content hash in a key: 128 bits, so two different batches
// never share a name in practice.
const keyHashLen = 32

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
// letters, digits and underscores ("k8s.cluster.name" becomes "k8s_cluster_name").
func partitionName(attr string) string {
	b := []byte(strings.ToLower(attr))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			b[i] = '_'
		}
	}
	return string(b)
}

// appendPartitionValue percent-encodes every byte but letters, digits and "-._~", so that a value can neither
// add a path segment ("/") nor be mistaken for the name separator ("="); Hive, Spark and DuckDB decode it.
func appendPartitionValue(dst []byte, v string) []byte {
	if v == "" {
		return append(dst, NullPartition...)
	}
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// keyLayout derives the partition of a record and the key of an object.
type keyLayout struct {
	// prefix is s3_prefix without its outer slashes, followed by "/" unless empty.
	prefix     string
	timeFormat partitionFormat
	attrs      []partitionAttr
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
	l := &keyLayout{timeFormat: f, ext: ext}
	if p := strings.Trim(cfg.S3Uploader.S3Prefix, "/"); p != "" {
		l.prefix = p + "/"
	}
	for _, a := range cfg.PartitionAttributes {
		l.attrs = append(l.attrs, partitionAttr{attr: a, name: partitionName(a)})
	}
	return l, nil
}

// appendPartition appends the partition path of a record, without slashes around it. The time is the record's
// timestamp, else its observed timestamp, in UTC; a record with neither lands in 1970, never in the time of
// the export, which would move a retried batch into another partition.
func (l *keyLayout) appendPartition(dst []byte, res pcommon.Resource, lr plog.LogRecord) []byte {
	for _, a := range l.attrs {
		v, ok := lr.Attributes().Get(a.attr)
		if !ok {
			v, ok = res.Attributes().Get(a.attr)
		}
		s := ""
		if ok {
			s = v.AsString()
		}
		dst = append(dst, a.name...)
		dst = append(dst, '=')
		dst = appendPartitionValue(dst, s)
		dst = append(dst, '/')
	}
	ts := lr.Timestamp()
	if ts == 0 {
		ts = lr.ObservedTimestamp()
	}
	return l.timeFormat.append(dst, ts.AsTime().UTC())
}

// key names the object holding lines in partition: the hash of the uncompressed lines makes a retried upload
// of the same batch overwrite its first attempt, whatever the compressor's output.
func (l *keyLayout) key(partition string, lines []byte) string {
	sum := sha256.Sum256(lines)
	return l.prefix + partition + "/" + hex.EncodeToString(sum[:])[:keyHashLen] + l.ext
}
