// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package recordparquet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

var nine = time.Date(2026, 3, 7, 9, 15, 0, 123_456_789, time.UTC)

// testLogs has a vulnerability result, a decision, and a record of a producer that does not follow the model:
// attributes of a column's name with other types, an empty string, every value type, a resource attribute
// hidden by the record's, trace context, no timestamps.
func testLogs() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "prod-eu-1")
	rl.Resource().Attributes().PutStr("k8s.node.name", "node-1")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()

	score := 9.8
	r := policyresult.Result{
		Cluster: "prod-eu-1", Source: "trivy", Policy: "CVE-2026-0001", Rule: "openssl", Category: "vulnerability",
		Severity: policyresult.SeverityCritical, Outcome: policyresult.OutcomeFail, Message: "openssl 3.0.1 is vulnerable",
		Resource: policyresult.Resource{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "cart"},
		Report:   policyresult.Report{Kind: "VulnerabilityReport", Namespace: "shop", Name: "deployment-cart"},
		State:    policyresult.StateNew, Timestamp: nine,
		Vulnerability: &policyresult.Vulnerability{ID: "CVE-2026-0001", Score: &score, ScoreVersion: "3.1",
			PackageName: "openssl", PackageVersion: "3.0.1", PackageFixedVersion: "3.0.2", PackageType: "debian"},
	}
	lr := lrs.AppendEmpty()
	policyresult.WriteLogRecord(&r, lr)
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(nine.Add(time.Second)))
	b := lr.Body().SetEmptyMap()
	b.PutStr("vulnerabilityID", "CVE-2026-0001")
	b.PutDouble("score", 9.8)

	allowed := false
	lr = lrs.AppendEmpty()
	policyresult.WriteDecisionLogRecord(&policyresult.Decision{
		Cluster: "prod-eu-1", ID: "d-1", Kind: policyresult.DecisionKindAdmission, Source: "gatekeeper",
		Policy: "K8sRequiredLabels", Rule: "must-have-team", Allowed: &allowed, Action: policyresult.ActionDeny,
		Messages: []string{"label team is required", "second"}, Operation: "CREATE", User: "alice",
		Resource: policyresult.Resource{Kind: "Pod", Namespace: "shop", Name: "cart-0"}, Timestamp: nine,
	}, lr)
	lr.Body().SetStr(`{"decision_id":"d-1"}`)

	lr = lrs.AppendEmpty()
	a := lr.Attributes()
	a.PutStr(policyresult.AttrClusterName, "record-wins")
	a.PutInt(policyresult.AttrPolicy, 42)
	a.PutStr(policyresult.AttrRule, "")
	a.PutStr(policyresult.AttrVulnerabilityScoreBase, "9.1")
	a.PutDouble("nan", math.NaN())
	a.PutBool("bool", true)
	a.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2})
	a.PutEmptySlice("slice").AppendEmpty().SetInt(1)
	a.PutEmptyMap("map").PutStr("k", "v")
	a.PutStr("text", "quote\" newline\n invalid\xff ü")
	a.PutStr(policyresult.AttrEventName, "custom.event")
	lr.SetSeverityNumber(plog.SeverityNumberError)
	lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	return ld
}

func encode(t testing.TB, ld plog.Logs, compression string) []byte {
	t.Helper()
	codec, err := Codec(compression)
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := NewEncoder(&buf, codec)
	writeAll(t, enc, ld)
	return buf.Bytes()
}

func writeAll(t testing.TB, enc *Encoder, ld plog.Logs) {
	t.Helper()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				require.NoError(t, enc.Write(rl.Resource(), lr))
			}
		}
	}
	require.NoError(t, enc.Close())
}

// readRows reads a file back with the Parquet library, each row as column name → value: string, float64,
// int64 or int32, as stored; NULL columns are absent.
func readRows(t testing.TB, file []byte) []map[string]any {
	t.Helper()
	r := parquet.NewReader(bytes.NewReader(file))
	defer r.Close()
	names := r.Schema().Columns()
	var out []map[string]any
	rows := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(rows)
		for _, row := range rows[:n] {
			m := map[string]any{}
			for _, v := range row {
				if v.IsNull() {
					continue
				}
				name := names[v.Column()][0]
				switch v.Kind() {
				case parquet.ByteArray:
					m[name] = string(v.ByteArray())
				case parquet.Double:
					m[name] = v.Double()
				case parquet.Int64:
					m[name] = v.Int64()
				case parquet.Int32:
					m[name] = v.Int32()
				default:
					t.Fatalf("column %s has kind %s", name, v.Kind())
				}
			}
			out = append(out, m)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
	}
}

// attributesOf puts a row's attributes back together, as JSON would show them: the columns of attrColumns and
// the members of the attributes column.
func attributesOf(t testing.TB, row map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	if s, ok := row[ColumnAttributes]; ok {
		require.NoError(t, json.Unmarshal([]byte(s.(string)), &out), s)
	}
	for _, c := range attrColumns {
		if v, ok := row[ColumnName(c.attr)]; ok {
			require.NotContains(t, out, c.attr, "%s is both a column and in attributes", c.attr)
			out[c.attr] = v
		}
	}
	return out
}

// wantAttributes is every attribute of a record as JSON shows it (recordjson), with the column types for
// those in a column.
func wantAttributes(t testing.TB, res pcommon.Resource, lr plog.LogRecord) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range policyresult.AllAttributes(res.Attributes(), lr.Attributes()) {
		if _, ok := column(k, v); ok {
			out[k] = v.AsRaw()
			continue
		}
		var decoded any
		require.NoError(t, json.Unmarshal(recordjson.AppendValue(nil, v), &decoded))
		out[k] = decoded
	}
	return out
}

func TestRoundTripKeepsEveryAttribute(t *testing.T) {
	ld := testLogs()
	rows := readRows(t, encode(t, ld, CompressionZstd))
	res := ld.ResourceLogs().At(0).Resource()
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Len(t, rows, lrs.Len())
	for i, row := range rows {
		lr := lrs.At(i)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			assert.Equal(t, wantAttributes(t, res, lr), attributesOf(t, row))
			if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
				assert.JSONEq(t, string(recordjson.AppendValue(nil, body)), row[ColumnBody].(string))
			} else {
				assert.NotContains(t, row, ColumnBody)
			}
		})
	}

	result, decision, other := rows[0], rows[1], rows[2]
	assert.Equal(t, lrs.At(0).SeverityText(), result[ColumnSeverityText])
	assert.Equal(t, int32(lrs.At(0).SeverityNumber()), result[ColumnSeverityNumber])
	assert.Equal(t, nine.UnixMicro(), result[ColumnTime], "microseconds, the nanoseconds truncated")
	assert.Equal(t, nine.Add(time.Second).UnixMicro(), result[ColumnObservedTime])
	assert.Equal(t, policyresult.EventResult, result[ColumnEventName])
	assert.Equal(t, "prod-eu-1", result["k8s_cluster_name"])
	assert.Equal(t, "fail", result["policy_result"])
	assert.Equal(t, "new", result["policy_result_state"])
	assert.Equal(t, "critical", result["policy_severity"])
	assert.Equal(t, "shop", result["policy_resource_namespace"])
	assert.Equal(t, 9.8, result["vulnerability_score_base"])
	assert.Equal(t, "3.0.2", result["package_fixed_version"])
	assert.Len(t, result["policy_result_key"], 32)
	assert.NotContains(t, result, ColumnTraceID)

	assert.Equal(t, policyresult.EventDecision, decision[ColumnEventName])
	assert.Equal(t, "d-1", decision["policy_decision_id"])
	assert.Equal(t, `"{\"decision_id\":\"d-1\"}"`, decision[ColumnBody], "a string body is a JSON string")

	assert.Equal(t, "record-wins", other["k8s_cluster_name"], "a record attribute hides the resource's")
	assert.Equal(t, "", other["policy_rule"], "an empty string is kept, not NULL")
	assert.NotContains(t, other, "policy_name", "an int policy.name is not a string: kept in attributes")
	assert.NotContains(t, other, "vulnerability_score_base", "a string score is not a double: kept in attributes")
	assert.Equal(t, "custom.event", other[ColumnEventName], "the event.name attribute when the field is unset")
	assert.NotContains(t, other, ColumnTime)
	assert.NotContains(t, other, ColumnSeverityText)
	assert.Equal(t, int32(plog.SeverityNumberError), other[ColumnSeverityNumber])
	assert.Equal(t, "0102030405060708090a0b0c0d0e0f10", other[ColumnTraceID])
	assert.Equal(t, "0102030405060708", other[ColumnSpanID])
	attrs := attributesOf(t, other)
	assert.Equal(t, float64(42), attrs[policyresult.AttrPolicy])
	assert.Equal(t, "9.1", attrs[policyresult.AttrVulnerabilityScoreBase])
	assert.Equal(t, "NaN", attrs["nan"])
	assert.Equal(t, "AAEC", attrs["bytes"])
	assert.Equal(t, "quote\" newline\n invalid\ufffd ü", attrs["text"])
}

func TestSchemaTypes(t *testing.T) {
	file := encode(t, testLogs(), CompressionZstd)
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	types := map[string]string{}
	for _, c := range f.Schema().Fields() {
		require.True(t, c.Optional(), c.Name())
		types[c.Name()] = c.Type().String()
	}
	want := map[string]string{
		ColumnTime:                 "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
		ColumnObservedTime:         "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
		ColumnEventName:            "STRING",
		ColumnSeverityText:         "STRING",
		ColumnSeverityNumber:       "INT(32,true)",
		"vulnerability_score_base": "DOUBLE",
		ColumnTraceID:              "STRING",
		ColumnSpanID:               "STRING",
		ColumnAttributes:           "JSON",
		ColumnBody:                 "JSON",
	}
	var order []string
	for _, c := range f.Schema().Fields() {
		order = append(order, c.Name())
	}
	wantOrder := []string{ColumnTime, ColumnObservedTime, ColumnEventName, ColumnSeverityText, ColumnSeverityNumber}
	for _, c := range attrColumns {
		if c.kind == kindString {
			want[ColumnName(c.attr)] = "STRING"
		}
		wantOrder = append(wantOrder, ColumnName(c.attr))
	}
	wantOrder = append(wantOrder, ColumnTraceID, ColumnSpanID, ColumnAttributes, ColumnBody)
	assert.Equal(t, want, types)
	assert.Equal(t, wantOrder, order, "the documented order")

	md := f.Metadata()
	require.Len(t, md.RowGroups, 1, "one row group per file")
	for _, cc := range md.RowGroups[0].Columns {
		assert.Equal(t, format.Zstd, cc.MetaData.Codec, strings.Join(cc.MetaData.PathInSchema, "."))
	}
}

func TestColumnName(t *testing.T) {
	assert.Equal(t, "k8s_cluster_name", ColumnName("k8s.cluster.name"))
	assert.Equal(t, "package_fixed_version", ColumnName(policyresult.AttrPackageFixedVersion))
	assert.Equal(t, "a_b_c", ColumnName("A-b/C"))
}

// Every compression gives a file the library reads back whole, and the same records always give the same
// bytes: a retried upload sends what the first attempt sent.
func TestCompressionsAreDeterministic(t *testing.T) {
	ld := testLogs()
	for _, c := range []struct {
		name  string
		codec format.CompressionCodec
	}{
		{CompressionZstd, format.Zstd}, {CompressionSnappy, format.Snappy}, {CompressionGzip, format.Gzip}, {CompressionNone, format.Uncompressed},
	} {
		t.Run(c.name, func(t *testing.T) {
			first := encode(t, ld, c.name)
			assert.True(t, bytes.Equal(first, encode(t, ld, c.name)), "the same records, the same bytes")
			assert.Len(t, readRows(t, first), 3)
			f, err := parquet.OpenFile(bytes.NewReader(first), int64(len(first)))
			require.NoError(t, err)
			assert.Equal(t, c.codec, f.Metadata().RowGroups[0].Columns[0].MetaData.Codec)
		})
	}
	_, err := Codec("lz4")
	require.EqualError(t, err, `unknown Parquet compression "lz4": want zstd, snappy, gzip or none`)
}

// Long, distinct values (more than a dictionary keeps, so the columns fall back to plain encoding) come back
// intact: the writer copied each row's text before the next row reused the buffer. The same records give the
// same bytes.
func TestManyDistinctValues(t *testing.T) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	const n = 5000
	for i := range n {
		lr := lrs.AppendEmpty()
		lr.Attributes().PutStr(policyresult.AttrPolicy, fmt.Sprintf("policy-%d-%s", i, strings.Repeat("x", 300)))
		lr.Attributes().PutStr(policyresult.AttrMessage, fmt.Sprintf("message %d", i))
		lr.Body().SetStr(fmt.Sprint(i))
	}
	file := encode(t, ld, CompressionZstd)
	assert.True(t, bytes.Equal(file, encode(t, ld, CompressionZstd)), "the same records, the same bytes")

	rows := readRows(t, file)
	require.Len(t, rows, n)
	for i, row := range rows {
		require.Equal(t, fmt.Sprintf("policy-%d-%s", i, strings.Repeat("x", 300)), row["policy_name"])
		require.Equal(t, fmt.Sprintf(`{"policy.message":"message %d"}`, i), row[ColumnAttributes])
		require.Equal(t, fmt.Sprintf(`"%d"`, i), row[ColumnBody])
	}
}

// A value longer than a column holds stays in the attributes column: in its column, Parquet would keep it
// uncompressed as the page's and the file's smallest and largest value (four records with an 8 MiB policy.rule
// made a file of 50 MB with zstd). One of exactly the limit keeps its column. The JSON columns keep no bounds:
// with page statistics, the same records with an 8 MiB body as well made a file of 134 MB.
func TestLongValuesStayInAttributes(t *testing.T) {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := range 4 {
		lr := lrs.AppendEmpty()
		lr.Attributes().PutStr(policyresult.AttrRule, strings.Repeat(string(rune('a'+i)), 8<<20))
		lr.Attributes().PutStr(policyresult.AttrPolicy, strings.Repeat("p", maxColumnValueBytes))
		lr.Body().SetStr(strings.Repeat(string(rune('k'+i)), 8<<20))
	}
	file := encode(t, ld, CompressionZstd)
	assert.Less(t, len(file), 1<<20, "compressed once, not kept as bounds")

	rows := readRows(t, file)
	require.Len(t, rows, 4)
	for i, row := range rows {
		assert.NotContains(t, row, "policy_rule")
		assert.Equal(t, strings.Repeat("p", maxColumnValueBytes), row["policy_name"])
		assert.Equal(t, map[string]any{
			policyresult.AttrRule:   strings.Repeat(string(rune('a'+i)), 8<<20),
			policyresult.AttrPolicy: strings.Repeat("p", maxColumnValueBytes),
		}, attributesOf(t, row))
		assert.Equal(t, `"`+strings.Repeat(string(rune('k'+i)), 8<<20)+`"`, row[ColumnBody])
	}
}
