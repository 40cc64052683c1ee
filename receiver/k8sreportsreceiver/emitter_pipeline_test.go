// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nothingWaits says whether the builder took every update out of the tracker.
func (e *emitterRun) nothingWaits() bool {
	t := e.rcv.tracker
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.order) == 0
}

// gates holds ConsumeLogs call n until gates[n] is closed.
func gates(n int) ([]chan struct{}, func(call int) error) {
	g := make([]chan struct{}, n+1)
	for i := range g {
		g[i] = make(chan struct{})
	}
	return g, func(call int) error {
		if call < len(g) {
			<-g[call]
		}
		return nil
	}
}

// TestNextBatchIsBuiltWhileThePipelineTakesThisOne holds the first ConsumeLogs call and checks that the
// builder meanwhile takes the next report out of the tracker and builds its batch.
func TestNextBatchIsBuiltWhileThePipelineTakesThisOne(t *testing.T) {
	g, answer := gates(1)
	sink := newGateSink(answer)
	e := startEmitter(t, emitterConfig(), t.TempDir(), sink)
	e.put("a", "1", 10) // one full batch
	e.put("b", "1", 3)
	call, n := waitCall(t, sink)
	require.Equal(t, [2]int{1, 10}, [2]int{call, n})
	require.Eventually(t, e.nothingWaits, waitFor, tick, "b was not taken while the first batch was in the pipeline")
	close(g[1])
	call, n = waitCall(t, sink)
	assert.Equal(t, [2]int{2, 3}, [2]int{call, n})
}

// TestChangeWhileItsBatchIsInThePipelineIsDiffedAgainstIt takes a new version of a report while the batch of
// its previous version is in the pipeline, not committed: it must be diffed against that batch's state and
// emit only what changed, not every result again as new.
func TestChangeWhileItsBatchIsInThePipelineIsDiffedAgainstIt(t *testing.T) {
	g, answer := gates(2)
	sink := newGateSink(answer)
	e := startEmitter(t, emitterConfig(), t.TempDir(), sink)
	e.put("x", "1", 10) // batch 1, held in the pipeline
	e.put("a", "1", 10) // batch 2, built meanwhile
	_, _ = waitCall(t, sink)
	require.Eventually(t, e.nothingWaits, waitFor, tick)
	e.put("a", "2", 11) // one more subject
	close(g[1])
	// Batch 2 is in the pipeline now, held; the builder takes a's second version meanwhile.
	call, n := waitCall(t, sink)
	require.Equal(t, [2]int{2, 10}, [2]int{call, n})
	require.Eventually(t, e.nothingWaits, waitFor, tick)
	close(g[2])
	call, n = waitCall(t, sink)
	assert.Equal(t, [2]int{3, 1}, [2]int{call, n}, "only the new subject of a's second version")
	require.Eventually(t, func() bool { return sink.LogRecordCount() == 21 }, waitFor, tick)
	recs := subjectsOf(t, sink)
	require.Len(t, recs, 21)
	assert.Equal(t, "a/pod-00010 new", recs[20])
}

// settled stands for an emitter with no batch on its way, in tests of the tracker alone.
func settled() bool { return true }
