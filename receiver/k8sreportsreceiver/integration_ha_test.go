// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/k8sleaderelectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
)

var electorID = component.MustNewID("k8s_leader_elector")

// replica is one collector of a leader-elected pair: an elector and a receiver sharing the storage volume.
func startReplica(t *testing.T, lease, storageDir string) (*testReceiver, *k8sleaderelectortest.Real) {
	t.Setenv("KUBECONFIG", cluster.Kubeconfig(t, apiserver.AdminToken))
	el := k8sleaderelectortest.NewReal(t, "default", lease)
	cfg := testConfig(t)
	cfg.K8sLeaderElector = &electorID
	// The receiver uses the elector through the host, as in the collector; the elector starts after it.
	tr := startReceiverWith(t, cfg, apiserver.AdminToken, storageDir, map[component.ID]component.Component{electorID: el})
	require.NoError(t, el.Start(context.Background(), tr.host))
	t.Cleanup(func() { _ = el.Shutdown(context.Background()) })
	return tr, el
}

// watchesNothing asserts that a replica's receiver never started: no watcher, no emitter.
func (tr *testReceiver) watchesNothing() {
	tr.t.Helper()
	tr.rcv.mu.Lock()
	defer tr.rcv.mu.Unlock()
	assert.Nil(tr.t, tr.rcv.tracker, "the follower started watching")
	assert.Empty(tr.t, tr.records(), "the follower emitted records")
}

func TestLeaderElectionHandoverNeitherLosesNorResends(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	storageDir := t.TempDir() // the volume both replicas mount
	lease := "otelcol-policy-" + testLabel(t)

	a, electorA := startReplica(t, lease, storageDir)
	electorA.WaitLeading(t) // a takes the lease first
	b, electorB := startReplica(t, lease, storageDir)

	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "ha-1", "fail")))
	recs := a.waitRecords(3)
	assert.Equal(t, "new", string(recs[0].State))
	b.watchesNothing() // the follower watches nothing

	// The leader goes away (a rolling update): it gives up the lease. A change made during the handover is
	// emitted once, by the new leader, and nothing emitted before is emitted again.
	a.stop()
	require.NoError(t, electorA.Shutdown(context.Background()))
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "ha-1", "pass")))
	recs = b.waitRecords(1)
	assert.Equal(t, "changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass", summary(recs[0]))

	cluster.Delete(t, policyReportGVR, "shop", "ha-1")
	recs = b.waitRecords(3)
	for _, r := range recs {
		assert.Equal(t, "resolved", string(r.State))
	}
	b.stop()
	require.NoError(t, electorB.Shutdown(context.Background()))
	assert.Empty(t, a.records(), "the former leader emitted nothing after it stopped")
}
