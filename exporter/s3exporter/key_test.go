package s3exporter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
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
		{"A_b.c~d", "A_b.c~d"},
	} {
		assert.Equal(t, tt.want, string(appendPartitionValue(nil, tt.in)), tt.in)
	}
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
			assert.Equal(t, tt.want, string(l.appendPartition(nil, res, lr)))
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
		assert.Equal(t, tt.want, l.key("date=2026-03-07/hour=09", lines))
		assert.Equal(t, l.key("date=2026-03-07/hour=09", lines), l.key("date=2026-03-07/hour=09", bytes.Clone(lines)), "same content, same key")
		assert.NotEqual(t, l.key("date=2026-03-07/hour=09", lines), l.key("date=2026-03-07/hour=09", lines[:8]), "other content, other key")
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
