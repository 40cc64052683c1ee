// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestPartitionFormat(t *testing.T) {
	ts := time.Date(2026, 3, 7, 9, 5, 1, 0, time.UTC)
	for _, tt := range []struct {
		format, want string
	}{
		{"date=%Y-%m-%d/hour=%H", "date=2026-03-07/hour=09"},
		{"year=%Y/month=%m/day=%d/hour=%H", "year=2026/month=03/day=07/hour=09"},
		{"dt=%F/%H%M%S", "dt=2026-03-07/090501"},
		{"%y/%j", "26/066"},
		{"p%%=%Y", "p%=2026"},
		{"static", "static"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			f, err := parsePartitionFormat(tt.format)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(f.append(nil, ts)))
		})
	}
}

func TestPartitionFormatRejects(t *testing.T) {
	for _, tt := range []struct {
		format, wantErr string
	}{
		{"", "must not be empty"},
		{"%Y/", `"%Y/" gives paths such as "2026/", with an empty, "." or ".." segment`},
		{"/%Y", `"/%Y" gives paths such as "/2026", with an empty, "." or ".." segment`},
		{"%Y//%m", `"%Y//%m" gives paths such as "2026//01", with an empty, "." or ".." segment`},
		{"%Y/../x", `"%Y/../x" gives paths such as "2026/../x", with an empty, "." or ".." segment`},
		{"./%Y", `"./%Y" gives paths such as "./2026", with an empty, "." or ".." segment`},
		{"%Y%", `"%Y%" ends with a lone %`},
		{"%s", `"%s": unsupported directive %s (use %Y %y %m %d %H %M %S %j %F %%)`},
	} {
		t.Run(tt.format, func(t *testing.T) {
			_, err := parsePartitionFormat(tt.format)
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, err.Error())
		})
	}
}

func TestPartitionNameAndValue(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{policyresult.AttrClusterName, "k8s_cluster_name"},
		{policyresult.AttrSource, "policy_source"},
		{"Team-Name/x y", "team_name_x_y"},
	} {
		assert.Equal(t, tt.want, partitionName(tt.in), tt.in)
	}
	for _, tt := range []struct{ in, want string }{
		{"prod-eu-1", "prod-eu-1"},
		{"kyverno", "kyverno"},
		{"", NullPartition},
		{"a/b", "a%2Fb"},
		{"..", ".."},
		{"k=v&x", "k%3Dv%26x"},
		{"with space", "with%20space"},
		{"50%", "50%25"},
		{"grüße", "gr%C3%BC%C3%9Fe"},
		{"A_b.c~d", "A_b.c%7Ed"},
		{strings.Repeat("x", 128), strings.Repeat("x", 128)},
		{strings.Repeat("%", 42) + "ab", strings.Repeat("%25", 42) + "ab"},
	} {
		got, shortened := appendPartitionValue(nil, tt.in, 128)
		assert.Equal(t, tt.want, string(got), tt.in)
		assert.False(t, shortened, tt.in)
	}
}

// TestLongPartitionValueIsShortened: a value whose encoding is longer than the limit keeps a prefix of its
// encoding, never cutting an escape or a character, then "~" and 16 hex digits of the SHA-256 of the whole
// value.
func TestLongPartitionValueIsShortened(t *testing.T) {
	hash := func(v string) string {
		sum := sha256.Sum256([]byte(v))
		return hex.EncodeToString(sum[:])[:16]
	}
	long := strings.Repeat("x", 129)
	for _, tt := range []struct{ in, want string }{
		{long, strings.Repeat("x", 111) + "~" + hash(long)},
		// 110 bytes of "x", then an escape that would end past byte 111: it is left out whole.
		{strings.Repeat("x", 110) + "/" + long, strings.Repeat("x", 110) + "~" + hash(strings.Repeat("x", 110)+"/"+long)},
		{strings.Repeat("x", 109) + "/" + long, strings.Repeat("x", 109) + "~" + hash(strings.Repeat("x", 109)+"/"+long)},
		{strings.Repeat("x", 108) + "/" + long, strings.Repeat("x", 108) + "%2F~" + hash(strings.Repeat("x", 108)+"/"+long)},
		// Nor a character: 18 "é" of 6 bytes each fit before byte 111, the 19th would not.
		{strings.Repeat("é", 1000), strings.Repeat("%C3%A9", 18) + "~" + hash(strings.Repeat("é", 1000))},
		{"\xff\xfe" + long, "%FF%FE" + strings.Repeat("x", 105) + "~" + hash("\xff\xfe"+long)},
	} {
		got, shortened := appendPartitionValue([]byte("name="), tt.in, 128)
		assert.True(t, shortened)
		assert.Equal(t, "name="+tt.want, string(got))
		assert.LessOrEqual(t, len(got)-len("name="), 128)
	}
	a, _ := appendPartitionValue(nil, long+"a", 128)
	b, _ := appendPartitionValue(nil, long+"b", 128)
	assert.NotEqual(t, string(a), string(b), "values that share a long prefix stay apart")
	c, _ := appendPartitionValue(nil, long+"a", 128)
	assert.Equal(t, string(a), string(c), "the same value, the same partition")
}

func newLayout(t *testing.T, prefix, format string, attrs []string, ext string) *keyLayout {
	cfg := createDefaultConfig().(*Config)
	cfg.S3Uploader.S3Prefix = prefix
	cfg.S3Uploader.S3PartitionFormat = format
	cfg.PartitionAttributes = attrs
	l, err := newKeyLayout(cfg, ext)
	require.NoError(t, err)
	return l
}

func TestRecordPartition(t *testing.T) {
	ts := time.Date(2026, 3, 7, 23, 59, 59, 999, time.UTC)
	observed := time.Date(2026, 3, 8, 0, 0, 1, 0, time.UTC)
	attrs := []string{policyresult.AttrClusterName, policyresult.AttrSource}
	for _, tt := range []struct {
		name    string
		cluster string
		source  any
		recAttr string // a record attribute named like the cluster attribute, which hides the resource's
		ts, obs time.Time
		want    string
		attrs   []string
		format  string
	}{
		{name: "resource and record attributes", cluster: "prod-eu-1", source: ("kyverno"), ts: ts,
			want: "k8s_cluster_name=prod-eu-1/policy_source=kyverno/date=2026-03-07/hour=23"},
		{name: "missing attributes", ts: ts,
			want: "k8s_cluster_name=__HIVE_DEFAULT_PARTITION__/policy_source=__HIVE_DEFAULT_PARTITION__/date=2026-03-07/hour=23"},
		{name: "observed time when no time", cluster: "c", source: ("s"), obs: observed,
			want: "k8s_cluster_name=c/policy_source=s/date=2026-03-08/hour=00"},
		{name: "time wins over observed time", cluster: "c", source: ("s"), ts: ts, obs: observed,
			want: "k8s_cluster_name=c/policy_source=s/date=2026-03-07/hour=23"},
		{name: "no time at all", cluster: "c", source: ("s"),
			want: "k8s_cluster_name=c/policy_source=s/date=1970-01-01/hour=00"},
		{name: "record attribute hides resource attribute", cluster: "res", recAttr: "rec/1", source: ("s"), ts: ts,
			want: "k8s_cluster_name=rec%2F1/policy_source=s/date=2026-03-07/hour=23"},
		{name: "non-string value", cluster: "c", source: int64(42), ts: ts,
			want: "k8s_cluster_name=c/policy_source=42/date=2026-03-07/hour=23"},
		{name: "time in another zone is partitioned in UTC", cluster: "c", source: ("s"),
			ts: time.Date(2026, 3, 8, 1, 30, 0, 0, time.FixedZone("CET", 3600)), want: "k8s_cluster_name=c/policy_source=s/date=2026-03-08/hour=00"},
		{name: "no attribute partitions", attrs: []string{}, cluster: "c", ts: ts, format: "%Y/%m/%d", want: "2026/03/07"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, format := attrs, "date=%Y-%m-%d/hour=%H"
			if tt.attrs != nil {
				a = tt.attrs
			}
			if tt.format != "" {
				format = tt.format
			}
			l := newLayout(t, "", format, a, ".jsonl")
			res := pcommon.NewResource()
			policyresult.WriteResource(res, tt.cluster)
			lr := plog.NewLogRecord()
			if !tt.ts.IsZero() {
				lr.SetTimestamp(pcommon.NewTimestampFromTime(tt.ts))
			}
			if !tt.obs.IsZero() {
				lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(tt.obs))
			}
			if tt.source != nil {
				require.NoError(t, lr.Attributes().PutEmpty(policyresult.AttrSource).FromRaw(tt.source))
			}
			if tt.recAttr != "" {
				lr.Attributes().PutStr(policyresult.AttrClusterName, tt.recAttr)
			}
			path, shortened := l.appendPartition(nil, res, lr)
			assert.Equal(t, tt.want, string(path))
			assert.Zero(t, shortened)
		})
	}
}

func TestObjectKey(t *testing.T) {
	lines := []byte(`{"a":1}` + "\n" + `{"a":2}` + "\n")
	sum := sha256.Sum256(lines)
	hash := hex.EncodeToString(sum[:])[:32]
	require.Len(t, hash, 32)
	for _, tt := range []struct {
		prefix, compression, want string
	}{
		{"", CompressionGzip, "date=2026-03-07/hour=09/" + hash + ".jsonl.gz"},
		{"evidence", CompressionZstd, "evidence/date=2026-03-07/hour=09/" + hash + ".jsonl.zst"},
		{"/a/b/", CompressionNone, "a/b/date=2026-03-07/hour=09/" + hash + ".jsonl"},
	} {
		c, err := newCodec(tt.compression)
		require.NoError(t, err)
		l := newLayout(t, tt.prefix, defaultPartitionFormat, nil, c.ext)
		assert.Equal(t, tt.want, l.key("date=2026-03-07/hour=09", sum))
	}
}

func TestCompressionIsDeterministicAndReadable(t *testing.T) {
	var lines []byte
	for i := range 2000 {
		lines = append(lines, `{"policy.result.id":"`...)
		lines = append(lines, hex.EncodeToString([]byte{byte(i), byte(i >> 8)})...)
		lines = append(lines, `","policy.result":"fail"}`+"\n"...)
	}
	for _, tt := range []struct {
		compression, encoding, ext string
		decode                     func([]byte) ([]byte, error)
	}{
		{CompressionNone, "", ".jsonl", func(b []byte) ([]byte, error) { return b, nil }},
		{CompressionGzip, "gzip", ".jsonl.gz", func(b []byte) ([]byte, error) {
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return io.ReadAll(r)
		}},
		{CompressionZstd, "zstd", ".jsonl.zst", func(b []byte) ([]byte, error) {
			d, err := zstd.NewReader(nil)
			if err != nil {
				return nil, err
			}
			defer d.Close()
			return d.DecodeAll(b, nil)
		}},
	} {
		t.Run(tt.compression, func(t *testing.T) {
			c, err := newCodec(tt.compression)
			require.NoError(t, err)
			assert.Equal(t, tt.ext, c.ext)
			assert.Equal(t, tt.encoding, c.contentEncoding)
			first, err := c.compress(nil, lines)
			require.NoError(t, err)
			second, err := c.compress(make([]byte, 0, 10), lines)
			require.NoError(t, err)
			assert.Equal(t, first, second)
			got, err := tt.decode(first)
			require.NoError(t, err)
			assert.Equal(t, lines, got)
		})
	}
}

// TestKeysAreValidByConstruction: Validate admits only settings whose keys fit S3's 1,024 bytes and whose path
// segments fit 255 bytes whatever the partition values are, and the keys of the longest, most hostile values
// stay within them.
func TestKeysAreValidByConstruction(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.S3Uploader.Region, cfg.S3Uploader.S3Bucket = "us-east-1", "b"
	cfg.S3Uploader.Compression = CompressionZstd
	cfg.S3Uploader.S3Prefix = strings.Repeat("p", 250) + "/" + strings.Repeat("q", 250)
	cfg.S3Uploader.S3PartitionFormat = "date=%F/hour=%H/minute=%M"
	cfg.PartitionAttributes = []string{policyresult.AttrClusterName, policyresult.AttrSource, policyresult.AttrPolicy}
	cfg.PartitionValueMaxBytes = 100
	// 501 + 1, three partitions of name, "=", 100 and "/" (16+13+11+3*102), the time (33), "/", 32, ".jsonl.zst".
	const longest = 502 + 346 + 33 + 1 + 32 + 10
	require.Equal(t, 924, longest)
	require.NoError(t, cfg.Validate())

	c, err := newCodec(CompressionZstd)
	require.NoError(t, err)
	l, err := newKeyLayout(cfg, c.ext)
	require.NoError(t, err)
	for _, v := range []string{
		strings.Repeat("x", 10_000), strings.Repeat("/", 2000), strings.Repeat("é", 3000), strings.Repeat("\x00..", 500),
		strings.Repeat("\xff", 700), strings.Repeat("ab", 49),
	} {
		res := pcommon.NewResource()
		res.Attributes().PutStr(policyresult.AttrClusterName, v)
		lr := plog.NewLogRecord()
		lr.Attributes().PutStr(policyresult.AttrSource, v)
		lr.Attributes().PutStr(policyresult.AttrPolicy, v)
		path, _ := l.appendPartition(nil, res, lr)
		key := l.key(string(path), sha256.Sum256([]byte("line\n")))
		assert.LessOrEqual(t, len(key), longest, "%.40q", v)
		for seg := range strings.SplitSeq(key, "/") {
			assert.LessOrEqual(t, len(seg), maxSegmentBytes, "%.40q", v)
			assert.NotContains(t, []string{"", ".", ".."}, seg)
		}
		if v[0] == 'x' {
			assert.Len(t, key, longest, "a value of ASCII letters fills partition_value_max_bytes exactly")
		}
	}

	cfg.PartitionValueMaxBytes = 200 // 3 × 100 more: 1,224 bytes
	assert.EqualError(t, cfg.Validate(), "keys can be 1224 bytes long with these s3uploader::s3_prefix, partition_attributes, "+
		"partition_value_max_bytes and s3uploader::s3_partition_format, more than S3's 1024: shorten one")
	cfg.PartitionValueMaxBytes = 240 // k8s_cluster_name=… is 257 bytes
	assert.ErrorContains(t, cfg.Validate(), `partition_attributes "k8s.cluster.name" with partition_value_max_bytes 240 gives key path segments such as "k8s_cluster_name=…" of 257 bytes, more than 255`)
	cfg.PartitionValueMaxBytes = 100
	cfg.S3Uploader.S3Prefix = strings.Repeat("p", 256)
	assert.ErrorContains(t, cfg.Validate(), "s3uploader::s3_prefix gives key path segments such as \"pppppppppppppppppppppppppppppppp…\" of 256 bytes")
}
