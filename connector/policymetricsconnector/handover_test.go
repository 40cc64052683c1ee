// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/k8sleaderelectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

var (
	electorID = component.MustNewID("k8s_leader_elector")
	storageID = filestoragetest.ID
)

// handoverSteps are batches of results and decisions, each followed by an interval's emission.
var handoverSteps = [][]any{
	{
		result("eu", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("eu", "p", "shop", "b", policyresult.OutcomePass, policyresult.StateNew),
		result("eu", "q", "pay", "c", policyresult.OutcomeWarn, policyresult.StateNew),
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny),
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny),
		decision("eu", "K8sAllowedRepos", false, policyresult.ActionWarn),
	},
	{
		result("eu", "p", "shop", "a", policyresult.OutcomePass, policyresult.StateChanged),
		result("eu", "q", "pay", "c", policyresult.OutcomeWarn, policyresult.StateResolved),
		decision("eu", "K8sRequiredLabels", false, policyresult.ActionDeny),
	},
	{}, // an interval without records: the emptied gauge is gone, the others are sent again
	{
		result("eu", "p", "pay", "d", policyresult.OutcomeError, policyresult.StateNew),
		decision("eu", "K8sAllowedRepos", false, policyresult.ActionWarn),
		decision("eu", "K8sBlockNodePort", false, policyresult.ActionDeny),
	},
}

// startReplica is one collector of a leader-elected pair, with its storage on the shared directory.
func startReplica(t *testing.T, dir string, el component.Component) *harness {
	t.Helper()
	cfg := storedConfig()
	cfg.K8sLeaderElector = &electorID
	h := newHarness(t, cfg, filestoragetest.NewReplicaHost(t, dir, map[component.ID]component.Component{electorID: el}))
	t.Cleanup(h.shutdown)
	return h
}

// TestHandOver: two replicas on one storage directory; A leads, counts and emits, hands over in the middle of
// an interval, and B continues. Every emission is that of one replica that never handed over: the gauges count
// every result, not only those B received, and the cumulative decision sums continue from A's values and start
// times instead of starting again from zero.
func TestHandOver(t *testing.T) {
	var want [][]string
	h, stop := startStored(t, storedConfig(), t.TempDir())
	for _, step := range handoverSteps {
		h.consume(step...)
		want = append(want, h.tick())
	}
	stop()

	for name, pair := range k8sleaderelectortest.Pairs {
		t.Run(name, func(t *testing.T) {
			p := pair(t)
			dir := t.TempDir()
			a, b := startReplica(t, dir, p.A), startReplica(t, dir, p.B)

			// Before any leader, records are refused, for the receiver to send them again.
			require.ErrorIs(t, a.c.ConsumeLogs(context.Background(), batch(handoverSteps[0]...)), resultstate.ErrNotLeading)
			assert.Empty(t, a.tick(), "a replica that does not lead emits nothing")

			p.LeadA(t)
			a.consume(handoverSteps[0]...)
			assert.Equal(t, want[0], a.tick())
			a.consume(handoverSteps[1]...)
			require.ErrorIs(t, b.c.ConsumeLogs(context.Background(), batch(handoverSteps[1]...)), resultstate.ErrNotLeading,
				"the follower refuses records")

			before := len(a.sink.AllMetrics())
			p.HandOver(t)
			require.Len(t, a.sink.AllMetrics(), before+1, "A emits once more on its way out")
			assert.Equal(t, want[1], series(t, a.sink.AllMetrics()[before]))
			assert.Equal(t, want[2], b.tick(), "B's first emission")
			b.consume(handoverSteps[3]...)
			assert.Equal(t, want[3], b.tick())
			starts := decisionStarts(a.sink.AllMetrics()...)
			assert.Len(t, starts, 1, "the sums A started share one start time")
			assert.Equal(t, starts, decisionStarts(b.sink.AllMetrics()[0]), "B continues A's sums")
			assert.Zero(t, a.c.decisions.len(), "the former leader holds no state")
		})
	}
}
