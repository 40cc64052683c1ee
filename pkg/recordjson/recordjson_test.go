// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package recordjson

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestAppendResultRecord(t *testing.T) {
	res := pcommon.NewResource()
	policyresult.WriteResource(res, "prod-eu-1")
	r := policyresult.Result{
		Cluster: "prod-eu-1", Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Severity: policyresult.SeverityMedium, Outcome: policyresult.OutcomeFail, Message: "label 'team' is required",
		Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart"},
		State:     policyresult.StateNew,
		Timestamp: time.Date(2026, 11, 22, 10, 30, 0, 500, time.UTC),
	}
	lr := plog.NewLogRecord()
	policyresult.WriteLogRecord(&r, lr)
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 22, 10, 30, 1, 0, time.UTC)))
	lr.Body().SetEmptyMap().PutStr("policy", "require-labels")

	line := string(Append(nil, res, lr))
	assert.Equal(t, `{"time":"2026-11-22T10:30:00.0000005Z","observed_time":"2026-11-22T10:30:01Z",`+
		`"severity_text":"WARN","severity_number":13,"event_name":"policy.result","k8s.cluster.name":"prod-eu-1",`+
		`"event.name":"policy.result","policy.source":"kyverno","policy.name":"require-labels","policy.rule":"check-team",`+
		`"policy.severity":"medium","policy.result":"fail","policy.message":"label 'team' is required",`+
		`"policy.result.key":"`+r.Key()+`","policy.result.id":"`+r.ID()+`","policy.result.state":"new",`+
		`"policy.resource.api_version":"v1","policy.resource.kind":"Pod","policy.resource.namespace":"shop",`+
		`"policy.resource.name":"cart","body":{"policy":"require-labels"}}`, line)
}

func TestAppendValuesAndCollisions(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutStr("k8s.cluster.name", "from-resource")
	res.Attributes().PutStr("shared", "resource loses")
	res.Attributes().PutStr(FieldBody, "resource attribute named body")
	lr := plog.NewLogRecord()
	a := lr.Attributes()
	a.PutStr("shared", "record wins")
	a.PutInt("int", -7)
	a.PutDouble("double", 0.25)
	a.PutDouble("nan", math.NaN())
	a.PutBool("bool", true)
	a.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2})
	s := a.PutEmptySlice("slice")
	s.AppendEmpty().SetStr("x")
	s.AppendEmpty().SetInt(1)
	a.PutEmptyMap("map").PutEmpty("null")
	a.PutStr(FieldTime, "an attribute named time")
	a.PutStr("text", "quote\" backslash\\ newline\n tab\t ctrl\x01 invalid\xff sep\u2028 ü")
	lr.Body().SetStr("plain")

	line := Append([]byte("prefix:"), res, lr)
	assert.Equal(t, "prefix:", string(line[:7]))
	var got map[string]any
	require.NoError(t, json.Unmarshal(line[7:], &got), string(line))
	assert.Equal(t, map[string]any{
		"k8s.cluster.name":           "from-resource",
		ResourcePrefix + FieldBody:   "resource attribute named body",
		"shared":                     "record wins",
		"int":                        float64(-7),
		"double":                     0.25,
		"nan":                        "NaN",
		"bool":                       true,
		"bytes":                      "AAEC",
		"slice":                      []any{"x", float64(1)},
		"map":                        map[string]any{"null": nil},
		AttributesPrefix + FieldTime: "an attribute named time",
		"text":                       "quote\" backslash\\ newline\n tab\t ctrl\x01 invalid\ufffd sep\u2028 ü",
		FieldBody:                    "plain",
	}, got)
	assert.Contains(t, string(line), `\u2028`, "line separators are escaped for JavaScript readers")
	assert.NotContains(t, string(line), FieldSeverityNumber, "unset fields are left out")
}

func TestAppendTraceContext(t *testing.T) {
	lr := plog.NewLogRecord()
	lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	assert.Equal(t, `{"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"0102030405060708"}`,
		string(Append(nil, pcommon.NewResource(), lr)))
}

func BenchmarkAppend(b *testing.B) {
	res := pcommon.NewResource()
	policyresult.WriteResource(res, "prod-eu-1")
	r := policyresult.Result{Cluster: "prod-eu-1", Source: "kyverno", Policy: "require-labels", Outcome: policyresult.OutcomeFail,
		Message: "label 'team' is required", Resource: policyresult.Resource{Kind: "Pod", Namespace: "shop", Name: "cart"}}
	lr := plog.NewLogRecord()
	policyresult.WriteLogRecord(&r, lr)
	var buf []byte
	for b.Loop() {
		buf = Append(buf[:0], res, lr)
	}
	b.SetBytes(int64(len(buf)))
}

func TestAppendObject(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr("policy.message", `say "no"`)
	m.PutInt("policy.checks.failed", 3)
	m.PutEmptySlice("policy.decision.messages").AppendEmpty().SetStr("denied")
	assert.Equal(t, `x{"policy.message":"say \"no\"","policy.checks.failed":3,"policy.decision.messages":["denied"]}`,
		string(AppendObject([]byte("x"), m.All())))
	assert.Equal(t, `{}`, string(AppendObject(nil, pcommon.NewMap().All())))
}
