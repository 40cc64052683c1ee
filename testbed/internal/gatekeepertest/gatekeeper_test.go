// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeepertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
)

// TestAuditWritesRunsToDisk proves the harness: a real audit writes one .log file per run, opened by the start
// marker, one violation_audited line per violating Pod, closed by the completed marker; a Pod fixed between two
// runs is gone from the next run.
func TestAuditWritesRunsToDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and Gatekeeper")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(stop)
	g := Start(t, cluster, Options{AuditInterval: time.Second, MaxAuditResults: 3})
	log := g.Record(t)

	g.CreateNamespace(t, "shop")
	g.CreateNamespace(t, "elsewhere")
	g.RequireLabel(t, "pods-need-team", "team", "shop")
	g.CreatePod(t, "shop", "web-0", nil)
	g.CreatePod(t, "shop", "web-1", map[string]string{"app": "web"})
	g.CreatePod(t, "shop", "api-0", map[string]string{"team": "payments"})
	g.CreatePod(t, "elsewhere", "web-0", nil) // not matched by the constraint

	first := g.WaitRun(t, time.Now())
	assert.Equal(t, filepath.Join(g.ChannelDir(), strings.ReplaceAll(first.ID, ":", "_")+".log"), first.Path)
	assert.Len(t, first.Lines, 4, "start marker, two violations, completed marker")
	assert.Equal(t, Message{ID: first.ID, Message: AuditStarted}, first.Started)
	assert.Equal(t, Message{ID: first.ID, Message: AuditCompleted}, first.Completed)
	require.Equal(t, []string{"shop/web-0", "shop/web-1"}, first.ResourceNames())
	violation := func(run Run, pod string, labels map[string]string) Message {
		return Message{
			ID: run.ID, EventType: ViolationAudited, Details: map[string]any{"missing_labels": []any{"team"}},
			Group: "constraints.gatekeeper.sh", Version: "v1beta1", Kind: RequiredLabelsKind, Name: "pods-need-team",
			Message: RequiredLabelsMessage("team"), EnforcementAction: "deny",
			ResourceAPIVersion: "v1", ResourceKind: "Pod", ResourceNamespace: "shop", ResourceName: pod,
			ResourceLabels: labels,
		}
	}
	assert.ElementsMatch(t, []Message{
		violation(first, "web-0", nil),
		violation(first, "web-1", map[string]string{"app": "web"}),
	}, first.Violations)

	// web-0 gets its label: the next run has web-1 only.
	g.LabelPod(t, "shop", "web-0", map[string]string{"team": "storefront"})
	second := g.WaitRun(t, time.Now())
	assert.Greater(t, second.ID, first.ID)
	assert.Equal(t, []Message{violation(second, "web-1", map[string]string{"app": "web"})}, second.Violations)

	// Gatekeeper keeps the newest MaxAuditResults runs: once a third run after the second is complete, the
	// first was deleted when the run before it completed. It deletes after the rename, so one more run may be
	// there for a moment.
	for range 3 {
		g.WaitRun(t, time.Now())
	}
	_, err = os.Stat(first.Path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the oldest runs are deleted")
	runs, err := g.Runs()
	require.NoError(t, err)
	assert.Contains(t, []int{3, 4}, len(runs), "maxAuditResults")

	// The record keeps the pruned runs, as written.
	recorded := log.Runs()
	require.GreaterOrEqual(t, len(recorded), 5)
	assert.Contains(t, recorded, first)
	assert.Contains(t, recorded, second)
	assert.Contains(t, recorded, runs[len(runs)-1])
}
