// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonpdata"
	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadata"
)

// testProcessor is the processor as the collector builds it, with its output and self-metrics.
type testProcessor struct {
	processor.Logs
	sink      *consumertest.LogsSink
	telemetry *componenttest.Telemetry
}

func newTestProcessor(t testing.TB, cfg *Config) *testProcessor {
	t.Helper()
	require.NoError(t, cfg.Validate())
	tp := &testProcessor{sink: &consumertest.LogsSink{}, telemetry: componenttest.NewTelemetry()}
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tp.telemetry.NewTelemetrySettings()
	p, err := NewFactory().CreateLogs(context.Background(), set, cfg, tp.sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	tp.Logs = p
	t.Cleanup(func() {
		require.NoError(t, p.Shutdown(context.Background()))
		require.NoError(t, tp.telemetry.Shutdown(context.Background()))
	})
	return tp
}

// process sends ld through the processor and returns what came out.
func (tp *testProcessor) process(t testing.TB, ld plog.Logs) plog.Logs {
	t.Helper()
	tp.sink.Reset()
	require.NoError(t, tp.ConsumeLogs(context.Background(), ld))
	all := tp.sink.AllLogs()
	require.Len(t, all, 1)
	return all[0]
}

// readJSON parses a JSON file into a value, in the order of the file.
func readJSON(t testing.TB, file string, dest pcommon.Value) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	require.NoError(t, jsonpdata.SetValue(raw, dest))
}

// logsWithBodies makes one record per file, each with the file's JSON as body.
func logsWithBodies(t testing.TB, files ...string) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	records := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, f := range files {
		readJSON(t, f, records.AppendEmpty().Body())
	}
	return ld
}

// requireSameEncoding compares logs by their OTLP encoding, which keeps map order (AsRaw would not); on a
// difference it shows the bodies as JSON in their order.
func requireSameEncoding(t *testing.T, want, got plog.Logs) {
	t.Helper()
	var m plog.ProtoMarshaler
	w, err := m.MarshalLogs(want)
	require.NoError(t, err)
	g, err := m.MarshalLogs(got)
	require.NoError(t, err)
	if !bytes.Equal(w, g) {
		require.Equal(t, bodiesJSON(want), bodiesJSON(got), "the encodings differ")
		require.Fail(t, "the encodings differ in more than the bodies")
	}
}

// bodiesJSON writes the bodies of ld as indented JSON, one per record, keeping map order.
func bodiesJSON(ld plog.Logs) string {
	var buf bytes.Buffer
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				writeJSON(&buf, lr.Body(), "")
				buf.WriteByte('\n')
			}
		}
	}
	return buf.String()
}

func writeJSON(buf *bytes.Buffer, v pcommon.Value, indent string) {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		buf.WriteString("{")
		i := 0
		for k, e := range v.Map().All() {
			if i > 0 {
				buf.WriteByte(',')
			}
			key, _ := json.Marshal(k)
			buf.WriteString("\n" + indent + "  ")
			buf.Write(key)
			buf.WriteString(": ")
			writeJSON(buf, e, indent+"  ")
			i++
		}
		if i > 0 {
			buf.WriteString("\n" + indent)
		}
		buf.WriteString("}")
	case pcommon.ValueTypeSlice:
		buf.WriteString("[")
		for i, e := range v.Slice().All() {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString("\n" + indent + "  ")
			writeJSON(buf, e, indent+"  ")
		}
		if v.Slice().Len() > 0 {
			buf.WriteString("\n" + indent)
		}
		buf.WriteString("]")
	default:
		b, _ := json.Marshal(v.AsRaw())
		buf.Write(b)
	}
}
