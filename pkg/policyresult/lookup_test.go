// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

func TestEventName(t *testing.T) {
	lr := plog.NewLogRecord()
	assert.Empty(t, EventName(lr))
	lr.Attributes().PutStr(AttrEventName, EventDecision)
	assert.Equal(t, EventDecision, EventName(lr), "the attribute, when the field is empty")
	lr.SetEventName(EventResult)
	assert.Equal(t, EventResult, EventName(lr), "the field wins")
}

func TestAttributeRecordWinsOverResource(t *testing.T) {
	res, attrs := pcommon.NewMap(), pcommon.NewMap()
	res.PutStr("both", "resource")
	res.PutStr("resource-only", "resource")
	res.PutStr("empty-on-record", "resource")
	attrs.PutStr("both", "record")
	attrs.PutStr("empty-on-record", "")
	attrs.PutInt("number", 42)

	for name, want := range map[string]string{
		"both": "record", "resource-only": "resource", "empty-on-record": "", "number": "42", "neither": "",
	} {
		assert.Equal(t, want, LookupString(res, attrs, name), name)
	}
	_, ok := Lookup(res, attrs, "neither")
	assert.False(t, ok)
	v, ok := Lookup(res, attrs, "empty-on-record")
	assert.True(t, ok, "an empty record attribute still wins")
	assert.Empty(t, v.Str())

	names := []string{"resource-only", "both", "neither"}
	values := make([]string, 3)
	LookupStrings(res, attrs, names, values)
	assert.Equal(t, []string{"resource", "record", ""}, values)

	type kv struct{ k, v string }
	var all []kv
	for k, v := range AllAttributes(res, attrs) {
		all = append(all, kv{k, v.AsString()})
	}
	assert.Equal(t, []kv{{"resource-only", "resource"}, {"both", "record"}, {"empty-on-record", ""}, {"number", "42"}}, all,
		"resource attributes the record does not hide, then the record's")
	n := 0
	for range AllAttributes(res, attrs) {
		if n++; n == 2 {
			break
		}
	}
	assert.Equal(t, 2, n, "the sequence stops when asked")
}

func TestIdentityAttribute(t *testing.T) {
	assert.Equal(t, AttrResultKey, IdentityAttribute(EventResult))
	assert.Equal(t, AttrDecisionID, IdentityAttribute(EventDecision))
	assert.Equal(t, AttrSummaryKey, IdentityAttribute(EventSummary))
	assert.Empty(t, IdentityAttribute("other"))
}

func TestWriteHashedLogRecordIsWriteLogRecord(t *testing.T) {
	r := sampleResult()
	want, got := plog.NewLogRecord(), plog.NewLogRecord()
	WriteLogRecord(&r, want)
	WriteHashedLogRecord(&r, r.Hashes(), got)
	assert.Equal(t, want.Attributes().AsRaw(), got.Attributes().AsRaw())
	assert.Equal(t, want.EventName(), got.EventName())
}
