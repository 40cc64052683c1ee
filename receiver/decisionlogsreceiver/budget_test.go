// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// wideObject is an object of n members.
func wideObject(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	return "{" + b.String()[1:] + "}"
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestBatchCostBoundsTheHeap holds the price of events above what their decoded events and records really take
// on the heap, for real events and for bodies built to amplify.
func TestBatchCostBoundsTheHeap(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.MaxBatchBytes = 1 << 30
	cfg.IncludeInput = true
	r, err := newReceiver(cfg, receivertest.NewNopSettings(NewFactory().Type()), new(consumertest.LogsSink))
	require.NoError(t, err)

	type shape struct {
		name  string
		event []byte
		n     int
	}
	var shapes []shape
	for _, f := range []string{"opa_bool.json", "opa_admission.json", "gatekeeper_admission.json", "generic_nested_input.json"} {
		var line bytes.Buffer
		require.NoError(t, json.Compact(&line, fixture(t, f)))
		shapes = append(shapes, shape{f, line.Bytes(), 2000})
	}
	for _, body := range []struct{ name, value string }{
		{"empty event", `{}`},
		{"integers", "[" + strings.Repeat("0,", 99_999) + "0]"},
		{"empty objects", "[" + strings.Repeat("{},", 99_999) + "{}]"},
		{"short strings", "[" + strings.Repeat(`"abcdefgh",`, 99_999) + `"x"]`},
		{"nested arrays", strings.Repeat("[", 5000) + strings.Repeat("]", 5000)},
		{"wide objects", "[" + strings.Repeat(wideObject(1000)+",", 49) + wideObject(1000) + "]"},
	} {
		n := 1
		if body.value == `{}` {
			n = 10_000
		}
		shapes = append(shapes, shape{body.name, fmt.Appendf(nil, `{"decision_id":"x","result":%s}`, body.value), n})
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			raws := make([][]byte, s.n)
			for i := range raws {
				raws[i] = bytes.Clone(s.event)
			}
			before := heapInUse()
			events := make([]decode.Event, 0, s.n)
			price := 0
			for _, raw := range raws {
				ev, err := decode.Auto(raw)
				if err != nil {
					ev, err = decode.OPA(raw)
				}
				require.NoError(t, err)
				c, err := r.price(&ev)
				require.NoError(t, err)
				price += c
				events = append(events, ev)
			}
			ld := r.toLogs(events)
			used := heapInUse() - before
			runtime.KeepAlive(ld)
			runtime.KeepAlive(events)
			runtime.KeepAlive(raws)
			t.Logf("%d events: priced %d B, heap %d B (%.2f)", s.n, price, used, float64(price)/float64(used))
			assert.GreaterOrEqual(t, uint64(price), used, "the price covers the heap")
		})
	}
}

func TestPriceOmitsAnInputThatWouldPassTheBudget(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.IncludeInput, cfg.MaxInputBytes, cfg.MaxBatchBytes, cfg.MaxObjectMembers = true, 1<<20, minBatchBytes, 100
	r, err := newReceiver(cfg, receivertest.NewNopSettings(NewFactory().Type()), new(consumertest.LogsSink))
	require.NoError(t, err)

	small, err := decode.OPA([]byte(`{"decision_id":"a","input":{"user":"alice"},"result":true}`))
	require.NoError(t, err)
	_, err = r.price(&small)
	require.NoError(t, err)
	assert.True(t, small.WithInput)

	// 20,000 values: within max_input_bytes, but about 1 MB as pdata.
	big, err := decode.OPA(fmt.Appendf(nil, `{"decision_id":"b","input":[%s0],"result":true}`, strings.Repeat("0,", 20_000)))
	require.NoError(t, err)
	c, err := r.price(&big)
	require.NoError(t, err)
	assert.False(t, big.WithInput, "the record leaves the input out")
	assert.LessOrEqual(t, c, cfg.MaxBatchBytes)

	wide, err := decode.OPA(fmt.Appendf(nil, `{"decision_id":"c","input":%s,"result":true}`, wideObject(cfg.MaxObjectMembers+1)))
	require.NoError(t, err)
	_, err = r.price(&wide)
	require.NoError(t, err)
	assert.False(t, wide.WithInput, "an input with an object wider than max_object_members is left out")

	_, err = r.price(&decode.Event{Body: fmt.Appendf(nil, `{"result":[%s0]}`, strings.Repeat("0,", 20_000))})
	assert.ErrorContains(t, err, "would take more than max_batch_bytes (65536) as a record")
	_, err = r.price(&decode.Event{Body: fmt.Appendf(nil, `{"result":%s}`, wideObject(cfg.MaxObjectMembers+1))})
	assert.ErrorContains(t, err, "has an object of more than max_object_members (100) members")
}
