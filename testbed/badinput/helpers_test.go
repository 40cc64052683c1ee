// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package badinput feeds malformed and hostile input to every receiver of the distribution through its real
// network endpoint, and checks that each input yields a counted error or a correct record, never a crash or an
// unbounded allocation, and that the receiver still works afterwards.
package badinput

import (
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// counter sums the data points of an int64 sum metric whose attributes match want.
func counter(t *testing.T, tel *componenttest.Telemetry, name string, want map[string]string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: not an int64 sum: %T", name, m.Data)
	}
	var n int64
	for _, dp := range sum.DataPoints {
		match := true
		for k, v := range want {
			got, _ := dp.Attributes.Value(attribute.Key(k))
			if got.AsString() != v {
				match = false
			}
		}
		if match {
			n += dp.Value
		}
	}
	return n
}

// allocated is the number of bytes allocated on the heap so far (cumulative, garbage included): the delta over
// an operation bounds what it allocated, whatever the garbage collector did meanwhile.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

const mib = 1 << 20
