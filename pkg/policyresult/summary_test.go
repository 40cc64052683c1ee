// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

func sampleGroup() []Attribute {
	return []Attribute{
		{Name: AttrClusterName, Value: "prod-eu-1"},
		{Name: AttrSource, Value: "kyverno"},
		{Name: AttrPolicy, Value: "require-labels"},
		{Name: AttrResourceNamespace, Value: "shop"},
	}
}

// goldenSummaryKey was computed with Python's hashlib over the length-prefixed, name-sorted fields, like
// goldenKey.
const goldenSummaryKey = "b441f0ff3d0f4dfe4eae0375183fde66"

func TestSummaryKeyIsGoldenAndOrderFree(t *testing.T) {
	g := sampleGroup()
	assert.Equal(t, goldenSummaryKey, SummaryKey(g))
	reversed := []Attribute{g[3], g[2], g[1], g[0]}
	assert.Equal(t, goldenSummaryKey, SummaryKey(reversed))
	assert.Equal(t, sampleGroup(), g, "SummaryKey must not reorder its argument")

	moved := sampleGroup()
	moved[2].Value, moved[3].Value = "shop", "require-labels"
	assert.NotEqual(t, goldenSummaryKey, SummaryKey(moved), "values belong to their names")
}

func TestCountsAdd(t *testing.T) {
	var c Counts
	for _, o := range []Outcome{OutcomePass, OutcomePass, OutcomeFail, OutcomeWarn, OutcomeError, OutcomeSkip, ""} {
		c.Add(o, 1)
	}
	assert.Equal(t, Counts{Pass: 2, Fail: 1, Warn: 1, Error: 1, Skip: 1, Total: 7}, c)
	c.Add(OutcomePass, -2)
	assert.Equal(t, Counts{Fail: 1, Warn: 1, Error: 1, Skip: 1, Total: 5}, c)
	assert.Equal(t, Counts{Pass: -1, Fail: 1, Total: 1}, Counts{Fail: 1, Total: 2}.Sub(Counts{Pass: 1, Total: 1}))
}

func TestSummaryRoundTrip(t *testing.T) {
	s := Summary{
		Key:        goldenSummaryKey,
		Attributes: sampleGroup()[1:],
		Counts:     Counts{Pass: 10, Fail: 3, Warn: 1, Total: 15},
		Change:     Counts{Pass: 1, Fail: -1},
		Timestamp:  time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC),
	}
	lr := plog.NewLogRecord()
	WriteSummaryLogRecord(&s, lr)

	assert.Equal(t, EventSummary, lr.EventName())
	assert.Equal(t, plog.SeverityNumberInfo, lr.SeverityNumber())
	assert.Equal(t, map[string]any{
		AttrEventName: EventSummary, AttrSource: "kyverno", AttrPolicy: "require-labels",
		AttrResourceNamespace: "shop", AttrSummaryKey: goldenSummaryKey,
		AttrSummaryPass: int64(10), AttrSummaryFail: int64(3), AttrSummaryWarn: int64(1),
		AttrSummaryError: int64(0), AttrSummarySkip: int64(0), AttrSummaryTotal: int64(15),
		AttrSummaryChangePass: int64(1), AttrSummaryChangeFail: int64(-1), AttrSummaryChangeWarn: int64(0),
		AttrSummaryChangeError: int64(0), AttrSummaryChangeSkip: int64(0), AttrSummaryChangeTotal: int64(0),
	}, lr.Attributes().AsRaw())

	back, err := ReadSummaryLogRecord(lr)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestReadSummaryLogRecordRejects(t *testing.T) {
	lr := plog.NewLogRecord()
	lr.SetEventName(EventResult)
	_, err := ReadSummaryLogRecord(lr)
	assert.ErrorContains(t, err, "not a policy.summary record")

	s := Summary{Key: goldenSummaryKey}
	lr = plog.NewLogRecord()
	WriteSummaryLogRecord(&s, lr)
	lr.Attributes().PutStr(AttrSummaryFail, "3")
	_, err = ReadSummaryLogRecord(lr)
	assert.ErrorContains(t, err, "attribute policy.summary.fail: want an int")
}

func TestSummaryAttributes(t *testing.T) {
	for _, name := range []string{AttrEventName, AttrSummaryKey, AttrSummaryFail, AttrSummaryTotal, AttrSummaryChangePass} {
		assert.True(t, IsSummaryAttribute(name), name)
	}
	for _, name := range DefaultSummaryGroup() {
		assert.False(t, IsSummaryAttribute(name), name)
	}
	assert.Equal(t, []string{AttrClusterName, AttrSource, AttrPolicy, AttrResourceNamespace}, DefaultSummaryGroup())
	g := DefaultSummaryGroup()
	g[0] = "changed"
	assert.Equal(t, AttrClusterName, DefaultSummaryGroup()[0], "each caller gets its own slice")
}
