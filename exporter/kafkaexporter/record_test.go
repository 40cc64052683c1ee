// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestRecordKeyTopicAndHeaders(t *testing.T) {
	const topicAttr = "kafka.topic"
	for _, tt := range []struct {
		name        string
		keyAttr     string
		record      func(lr plog.LogRecord)
		resource    func(res pcommon.Resource)
		wantKey     []byte
		wantTopic   string
		wantRefused string
		wantHeaders []kgo.RecordHeader
	}{
		{
			name: "result keyed by result key",
			record: func(lr plog.LogRecord) {
				lr.SetEventName(policyresult.EventResult)
				lr.Attributes().PutStr(policyresult.AttrResultKey, "rk")
				lr.Attributes().PutStr(policyresult.AttrSummaryKey, "sk")
				lr.Attributes().PutStr(policyresult.AttrSource, "kyverno")
			},
			wantKey:   []byte("rk"),
			wantTopic: "default",
			wantHeaders: []kgo.RecordHeader{
				{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventResult)},
				{Key: policyresult.AttrSource, Value: []byte("kyverno")},
			},
		},
		{
			name: "summary keyed by summary key, event name from the attribute",
			record: func(lr plog.LogRecord) {
				lr.Attributes().PutStr(policyresult.AttrEventName, policyresult.EventSummary)
				lr.Attributes().PutStr(policyresult.AttrResultKey, "rk")
				lr.Attributes().PutStr(policyresult.AttrSummaryKey, "sk")
			},
			wantKey:     []byte("sk"),
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventSummary)}},
		},
		{
			name: "scan run keyed by scan key",
			record: func(lr plog.LogRecord) {
				lr.SetEventName(policyresult.EventScan)
				lr.Attributes().PutStr(policyresult.AttrScanKey, "sc")
				lr.Attributes().PutStr(policyresult.AttrScanID, "run")
			},
			wantKey:     []byte("sc"),
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventScan)}},
		},
		{
			name: "decision keyed by decision id",
			record: func(lr plog.LogRecord) {
				lr.SetEventName(policyresult.EventDecision)
				lr.Attributes().PutStr(policyresult.AttrDecisionID, "d1")
				lr.Attributes().PutStr(policyresult.AttrResultKey, "rk")
			},
			wantKey:     []byte("d1"),
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventDecision)}},
		},
		{
			name:    "decision keyed by decision id whatever record_key_attribute says, event name from the attribute",
			keyAttr: policyresult.AttrResultID,
			record: func(lr plog.LogRecord) {
				lr.Attributes().PutStr(policyresult.AttrEventName, policyresult.EventDecision)
				lr.Attributes().PutStr(policyresult.AttrDecisionID, "d1")
				lr.Attributes().PutStr(policyresult.AttrResultID, "ri")
			},
			wantKey:     []byte("d1"),
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventDecision)}},
		},
		{
			name: "decision without a decision id has a null key",
			record: func(lr plog.LogRecord) {
				lr.SetEventName(policyresult.EventDecision)
				lr.Attributes().PutStr(policyresult.AttrResultKey, "rk")
			},
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventDecision)}},
		},
		{
			name:    "result keyed by record_key_attribute",
			keyAttr: policyresult.AttrResultID,
			record: func(lr plog.LogRecord) {
				lr.SetEventName(policyresult.EventResult)
				lr.Attributes().PutStr(policyresult.AttrResultKey, "rk")
				lr.Attributes().PutStr(policyresult.AttrResultID, "ri")
			},
			wantKey:     []byte("ri"),
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventResult)}},
		},
		{
			name: "result without policy.result.key keyed by its identity",
			record: func(lr plog.LogRecord) {
				lr.SetEventName(policyresult.EventResult)
				lr.Attributes().PutStr(policyresult.AttrPolicy, "require-labels")
			},
			resource:    func(res pcommon.Resource) { res.Attributes().PutStr(policyresult.AttrClusterName, "laptop") },
			wantKey:     []byte((&policyresult.Result{Cluster: "laptop", Policy: "require-labels"}).Key()),
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventResult)}},
		},
		{
			name:        "result without policy.result.key nor policy.name has a null key",
			record:      func(lr plog.LogRecord) { lr.SetEventName(policyresult.EventResult) },
			wantTopic:   "default",
			wantHeaders: []kgo.RecordHeader{{Key: policyresult.AttrEventName, Value: []byte(policyresult.EventResult)}},
		},
		{
			name:    "configured key attribute, non-string value",
			keyAttr: "n",
			record:  func(lr plog.LogRecord) { lr.Attributes().PutInt("n", 42) },
			wantKey: []byte("42"), wantTopic: "default", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "empty key attribute is a null key",
			record:    func(lr plog.LogRecord) { lr.Attributes().PutStr(policyresult.AttrResultKey, "") },
			wantTopic: "default", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "topic from the record wins over the resource",
			record:    func(lr plog.LogRecord) { lr.Attributes().PutStr(topicAttr, "from-record") },
			resource:  func(res pcommon.Resource) { res.Attributes().PutStr(topicAttr, "from-resource") },
			wantTopic: "from-record", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "topic from the resource",
			record:    func(plog.LogRecord) {},
			resource:  func(res pcommon.Resource) { res.Attributes().PutStr(topicAttr, "from-resource") },
			wantTopic: "from-resource", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "empty topic attribute falls back",
			record:    func(lr plog.LogRecord) { lr.Attributes().PutStr(topicAttr, "") },
			wantTopic: "default", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "an empty topic on the record wins over the resource",
			record:    func(lr plog.LogRecord) { lr.Attributes().PutStr(topicAttr, "") },
			resource:  func(res pcommon.Resource) { res.Attributes().PutStr(topicAttr, "from-resource") },
			wantTopic: "default", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "a topic topic_allowlist does not list falls back",
			record:    func(lr plog.LogRecord) { lr.Attributes().PutStr(topicAttr, "__consumer_offsets") },
			wantTopic: "default", wantRefused: "__consumer_offsets", wantHeaders: []kgo.RecordHeader{},
		},
		{
			name:      "logs::topic is always allowed",
			record:    func(lr plog.LogRecord) { lr.Attributes().PutStr(topicAttr, "default") },
			wantTopic: "default", wantHeaders: []kgo.RecordHeader{},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Logs.Topic = "default"
			cfg.TopicFromAttribute = topicAttr
			cfg.TopicAllowlist = []string{"from-record", "from-resource"}
			if tt.keyAttr != "" {
				cfg.RecordKeyAttribute = tt.keyAttr
			}
			b := newRecordBuilder(cfg)
			res := pcommon.NewResource()
			if tt.resource != nil {
				tt.resource(res)
			}
			lr := plog.NewLogRecord()
			tt.record(lr)
			assert.Equal(t, tt.wantKey, b.key(res, lr))
			topic, refused := b.topicFor(res, lr)
			assert.Equal(t, tt.wantTopic, topic)
			assert.Equal(t, tt.wantRefused, refused)
			assert.Equal(t, tt.wantHeaders, headers(lr))
		})
	}
}
