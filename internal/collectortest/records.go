// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/collectortest"

import (
	"bufio"
	"os"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// EachFileRecord calls f for every log record of a file of OTLP JSON requests, one a line (what durable_file and
// the contrib file exporter write). A file that does not exist yet holds no records.
func EachFileRecord(t testing.TB, path string, f func(res pcommon.Resource, lr plog.LogRecord)) {
	t.Helper()
	file, err := os.Open(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		eachLogRecord(ld, f)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func eachLogRecord(ld plog.Logs, f func(res pcommon.Resource, lr plog.LogRecord)) {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				f(rl.Resource(), lr)
			}
		}
	}
}
