// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor

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

var electorID = component.MustNewID("k8s_leader_elector")

// handoverSteps are batches of results, each followed by an interval's summaries.
var handoverSteps = [][]policyresult.Result{
	{
		result("prod", "p", "shop", "a", policyresult.OutcomeFail, policyresult.StateNew),
		result("prod", "p", "shop", "b", policyresult.OutcomePass, policyresult.StateNew),
		result("prod", "q", "shop", "a", policyresult.OutcomeWarn, policyresult.StateNew),
		result("prod", "q", "pay", "c", policyresult.OutcomePass, policyresult.StateNew),
	},
	{
		result("prod", "p", "shop", "a", policyresult.OutcomePass, policyresult.StateChanged),
		result("prod", "q", "shop", "a", policyresult.OutcomeWarn, policyresult.StateResolved),
	},
	{
		result("prod", "p", "shop", "d", policyresult.OutcomeSkip, policyresult.StateNew),
		result("prod", "q", "pay", "c", policyresult.OutcomeFail, policyresult.StateChanged),
	},
}

// startReplica is one collector of a leader-elected pair, with its storage on the shared directory.
func startReplica(t *testing.T, dir string, el component.Component) *harness {
	t.Helper()
	cfg := testConfig()
	cfg.Storage, cfg.K8sLeaderElector = &storageID, &electorID
	h := newHarness(t, cfg, nil, filestoragetest.NewReplicaHost(t, dir, map[component.ID]component.Component{electorID: el}))
	t.Cleanup(func() { require.NoError(t, h.lp.Shutdown(context.Background())) })
	return h
}

// TestHandOver: two replicas on one storage directory; A leads, counts and emits, hands over in the middle of
// an interval, and B continues. The summaries are those of one replica that never handed over: the change A
// had counted is summarised once (by A, on its way out), B re-emits no unchanged group, and its counts and
// changes continue from A's.
func TestHandOver(t *testing.T) {
	want := uninterrupted(t, handoverSteps)
	require.Len(t, want, 7)

	for name, pair := range k8sleaderelectortest.Pairs {
		t.Run(name, func(t *testing.T) {
			p := pair(t)
			dir := t.TempDir()
			a, b := startReplica(t, dir, p.A), startReplica(t, dir, p.B)

			// Before any leader, records are refused, for the receiver to send them again.
			err := a.lp.ConsumeLogs(context.Background(), logs(handoverSteps[0]...))
			require.ErrorIs(t, err, resultstate.ErrNotLeading)
			assert.Empty(t, a.tick(), "a replica that does not lead emits nothing")

			p.LeadA(t)
			a.consume(handoverSteps[0]...)
			got := a.tick()
			a.consume(handoverSteps[1]...)
			require.ErrorIs(t, b.lp.ConsumeLogs(context.Background(), logs(handoverSteps[1]...)), resultstate.ErrNotLeading,
				"the follower refuses records")

			before := len(a.next.AllLogs())
			p.HandOver(t)
			got = append(got, summariesOf(t, a.next.AllLogs()[before:]...)...)
			assert.Empty(t, b.tick(), "the new leader re-emits no unchanged group")
			b.consume(handoverSteps[2]...)
			got = append(got, b.tick()...)
			assert.Equal(t, want, got)
			assert.Zero(t, a.agg.tally.Len(), "the former leader holds no state")
		})
	}
}
