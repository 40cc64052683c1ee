// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/leadertest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestRestartWithStateEmitsWhatChangedWhileDown(t *testing.T) {
	srv := startFakeServer(t)
	storageDir := t.TempDir()
	tr := startOnFake(t, srv, fakeConfig(), storageDir, nil)
	applyPodReports(t, srv, "fail", "r1", "r2")
	srv.ApplyYAML(t, clusterPolicyReportGVR, fmt.Sprintf(clusterReport, "cis-a", 1))
	tr.waitRecords(7)
	tr.stop()

	// While the receiver is down: one outcome changes, one report is deleted, one is created, one is untouched.
	applyPodReports(t, srv, "pass", "r1")
	srv.Delete(clusterPolicyReportGVR, "", "cis-a")
	srv.ApplyYAML(t, clusterPolicyReportGVR, fmt.Sprintf(clusterReport, "cis-b", 2))

	tr = startOnFake(t, srv, fakeConfig(), storageDir, nil)
	recs := tr.waitRecords(3)
	assert.Equal(t, []string{
		"changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		"new kube-bench cis-1.8/1.2.2 // -> warn",
		"resolved kube-bench cis-1.8/1.2.1 // -> warn",
	}, summaries(recs))
	assert.Equal(t, "r1", recs[0].Report.Name)
	tr.stop()

	// A restart with nothing changed emits nothing, once both resources were listed.
	tr = startOnFake(t, srv, fakeConfig(), storageDir, nil)
	tr.quietAfter(seenVersion{gvr: policyReportGVR}, seenVersion{gvr: clusterPolicyReportGVR})
	tr.stop()

	// A report kind whose CRD was deleted while the receiver was down: its reports are resolved.
	srv.Unserve(clusterPolicyReportGVR)
	tr = startOnFake(t, srv, fakeConfig(), storageDir, nil)
	assert.Equal(t, []string{"resolved kube-bench cis-1.8/1.2.2 // -> warn"}, summaries(tr.waitRecords(1)))
}

func TestInitialSyncNoneEmitsOnlyLaterChangesOnFake(t *testing.T) {
	srv := startFakeServer(t)
	applyPodReports(t, srv, "fail", "existing")
	cfg := fakeConfig()
	cfg.InitialSync = InitialSyncNone
	tr := startOnFake(t, srv, cfg, "", nil)
	tr.quietAfter(seenVersion{gvr: policyReportGVR})
	applyPodReports(t, srv, "pass", "existing")
	assert.Equal(t, "changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		summary(tr.waitRecords(1)[0]))
}

// startFollower runs a receiver that watches only while its fake elector says it leads.
func startFollower(t *testing.T, srv *fakeapiserver.Server, storageDir string) (*testReceiver, *leadertest.Elector) {
	t.Helper()
	el := leadertest.New()
	cfg := fakeConfig()
	cfg.K8sLeaderElector = &electorID
	tr := newTestReceiver(t, cfg, srv.Kubeconfig(t), storageDir, map[component.ID]component.Component{electorID: el}, nil)
	tr.rcv.retry = fakeRetry
	tr.start()
	return tr, el
}

func TestLeaderHandoverNeitherLosesNorResends(t *testing.T) {
	srv := startFakeServer(t)
	storageDir := t.TempDir() // the volume both replicas mount
	a, electorA := startFollower(t, srv, storageDir)
	b, electorB := startFollower(t, srv, storageDir)

	electorA.Lead()
	applyPodReports(t, srv, "fail", "ha-1")
	for _, r := range a.waitRecords(3) {
		assert.Equal(t, policyresult.StateNew, r.State)
	}
	b.watchesNothing()

	// The leader loses the lease; a change made during the handover is emitted once, by the new leader, and
	// nothing emitted before is emitted again.
	electorA.StopLeading()
	applyPodReports(t, srv, "pass", "ha-1")
	electorB.Lead()
	assert.Equal(t, []string{"changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass"},
		summaries(b.waitRecords(1)))
	assert.Empty(t, a.records(), "the former leader emitted nothing after it stopped")

	// Back to the first replica: it continues from what the second committed.
	electorB.StopLeading()
	rv := srv.Delete(policyReportGVR, "shop", "ha-1")
	electorA.Lead()
	recs := a.waitRecords(3)
	for _, r := range recs {
		assert.Equal(t, policyresult.StateResolved, r.State)
	}
	a.quietAfter(seenVersion{policyReportGVR, rv})
	assert.Empty(t, b.records())
	require.NoError(t, electorA.Shutdown(t.Context()))
	assert.False(t, electorA.Leading())
}
