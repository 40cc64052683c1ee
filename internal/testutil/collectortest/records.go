// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"

import (
	"bytes"
	"iter"
	"os"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// EachFileRecord calls f for every log record of a file of OTLP JSON requests, one a line (what durable_file and
// the contrib file exporter write). A file that does not exist yet holds no records.
func EachFileRecord(t testing.TB, path string, f func(res pcommon.Resource, lr plog.LogRecord)) {
	t.Helper()
	for line := range CompleteLines(t, path) {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		EachLogRecord(ld, f)
	}
}

// CompleteLines are the lines of a file an exporter appends to while the test reads it: a last line without its
// newline is one still being written, left for the next read. A file that does not exist yet has none.
func CompleteLines(t testing.TB, path string) iter.Seq[[]byte] {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Lines(data[:bytes.LastIndexByte(data, '\n')+1])
}

// EachLogRecord calls f for every log record of ld with its resource.
func EachLogRecord(ld plog.Logs, f func(res pcommon.Resource, lr plog.LogRecord)) {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				f(rl.Resource(), lr)
			}
		}
	}
}
