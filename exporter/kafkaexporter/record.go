// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

// recordBuilder turns log records into Kafka records. It is not safe for concurrent use: it reuses a
// single-record plog.Logs for the otlp_proto encoding.
type recordBuilder struct {
	topic     string
	topicAttr string
	allowed   map[string]bool
	keyAttr   string
	encoding  string

	marshaler plog.ProtoMarshaler
	// single holds one resource, one scope and one record: the otlp_proto value of the record being built.
	single plog.Logs
}

func newRecordBuilder(cfg *Config) *recordBuilder {
	b := &recordBuilder{
		topic:     cfg.Logs.Topic,
		topicAttr: cfg.TopicFromAttribute,
		allowed:   make(map[string]bool, len(cfg.TopicAllowlist)),
		keyAttr:   cfg.RecordKeyAttribute,
		encoding:  cfg.Logs.Encoding,
	}
	for _, t := range cfg.TopicAllowlist {
		b.allowed[t] = true
	}
	return b
}

// key is the record key: the value of the identity attribute of the record's event (policyresult.
// IdentityAttribute: the summary key of a summary, the decision ID of a decision), and of record_key_attribute for
// results and records of other events. A result keyed by policy.result.key that does not carry it (a producer
// sending plain OTLP) is keyed by its identity, as every other component keys it (policyresult.RecordKey). nil
// (a null key) when there is no key: an empty key would make all such records one key to a compacted topic,
// which then keeps only the last of them.
func (b *recordBuilder) key(res pcommon.Resource, lr plog.LogRecord) []byte {
	name := b.keyAttr
	event := policyresult.EventName(lr)
	if event != policyresult.EventResult {
		if id := policyresult.IdentityAttribute(event); id != "" {
			name = id
		}
	}
	if k := attrString(lr.Attributes(), name); k != "" {
		return []byte(k)
	}
	if event == policyresult.EventResult && name == policyresult.AttrResultKey {
		if k, err := policyresult.RecordKey(res.Attributes(), lr.Attributes()); err == nil {
			return []byte(k.String())
		}
	}
	return nil
}

func attrString(m pcommon.Map, name string) string {
	v, ok := m.Get(name)
	if !ok {
		return ""
	}
	if v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return v.AsString()
}

// topicFor is the value of topic_from_attribute (policyresult.Lookup: the record's, else its resource's) when
// topic_allowlist names it, else logs::topic. refused is the attribute's value when the allowlist does not name
// it (the record goes to logs::topic).
func (b *recordBuilder) topicFor(res pcommon.Resource, lr plog.LogRecord) (topic, refused string) {
	if b.topicAttr == "" {
		return b.topic, ""
	}
	switch t := policyresult.LookupString(res.Attributes(), lr.Attributes(), b.topicAttr); {
	case t == "":
		return b.topic, ""
	case t == b.topic || b.allowed[t]:
		return t, ""
	default:
		return b.topic, t
	}
}

// headers let a consumer route or filter records without decoding the value.
func headers(lr plog.LogRecord) []kgo.RecordHeader {
	hs := make([]kgo.RecordHeader, 0, 2)
	if e := policyresult.EventName(lr); e != "" {
		hs = append(hs, kgo.RecordHeader{Key: policyresult.AttrEventName, Value: []byte(e)})
	}
	if s := attrString(lr.Attributes(), policyresult.AttrSource); s != "" {
		hs = append(hs, kgo.RecordHeader{Key: policyresult.AttrSource, Value: []byte(s)})
	}
	return hs
}

// startScope prepares the otlp_proto encoding of the records of one scope: their resource and scope are copied
// once, and value replaces only the record.
func (b *recordBuilder) startScope(rl plog.ResourceLogs, sl plog.ScopeLogs) {
	if b.encoding != EncodingOTLPProto {
		return
	}
	b.single = plog.NewLogs()
	srl := b.single.ResourceLogs().AppendEmpty()
	rl.Resource().CopyTo(srl.Resource())
	srl.SetSchemaUrl(rl.SchemaUrl())
	ssl := srl.ScopeLogs().AppendEmpty()
	sl.Scope().CopyTo(ssl.Scope())
	ssl.SetSchemaUrl(sl.SchemaUrl())
	ssl.LogRecords().AppendEmpty()
}

// value encodes lr, of the scope last passed to startScope.
func (b *recordBuilder) value(res pcommon.Resource, lr plog.LogRecord) ([]byte, error) {
	if b.encoding == EncodingOTLPProto {
		lr.CopyTo(b.single.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0))
		buf, err := b.marshaler.MarshalLogs(b.single)
		if err != nil {
			return nil, fmt.Errorf("encoding a log record as OTLP protobuf: %w", err)
		}
		return buf, nil
	}
	return recordjson.Append(nil, res, lr), nil
}

// recordSize approximates what a record adds to a batch before compression, without the few bytes of varint
// framing, which franz-go's own check covers.
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
