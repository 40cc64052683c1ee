// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestDefaultConfigWatchesTheCurrentKubeconfig: with a kubeconfig, `make run` ships the cluster's policy
// reports to ./data, one record per result, and a restart re-sends nothing.
func TestDefaultConfigWatchesTheCurrentKubeconfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	defer stop()
	cluster.InstallCRDs(t, filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "testdata", "crds", "wgpolicyk8s.io.yaml"))
	cluster.CreateNamespace(t, "shop")
	gvr := schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	cluster.Apply(t, gvr, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"scope":    map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web-0"},
		"results": []any{
			map[string]any{"source": "kyverno", "policy": "disallow-latest-tag", "rule": "validate-image-tag", "result": "fail", "message": "latest tag"},
			map[string]any{"source": "kyverno", "policy": "require-labels", "rule": "check-team", "result": "pass"},
		},
	}})

	dir := t.TempDir()
	env := []string{"KUBECONFIG=" + cluster.Kubeconfig(t, apiserver.AdminToken), "OTELCOL_POLICY_CLUSTER_NAME=dev"}
	c, _ := start(t, dir, "", env...)
	got := waitResults(t, dir, 2)
	assert.ElementsMatch(t, []string{"disallow-latest-tag fail new", "require-labels pass new"}, []string{
		got[0].Policy + " " + string(got[0].Outcome) + " " + string(got[0].State),
		got[1].Policy + " " + string(got[1].Outcome) + " " + string(got[1].State),
	})
	assert.Equal(t, "dev", got[0].Cluster)
	assert.Equal(t, policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0"}, got[0].Resource)
	c.Stop()

	// The default config keeps the receiver's state in file_storage: a restart emits nothing new. A report
	// created after the restart is the signal: the receiver emits its result after what it listed at start,
	// so once that result is written and the exporter holds nothing more, a re-sent result would be written
	// too.
	c, p := start(t, dir, "", env...)
	cluster.Apply(t, gvr, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": "api", "namespace": "shop"},
		"scope":    map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "api-0"},
		"results":  []any{map[string]any{"source": "kyverno", "policy": "require-labels", "rule": "check-team", "result": "fail"}},
	}})
	waitResults(t, dir, 3)
	waitDrained(t, p, "durable_file", 1)
	c.Stop()
	got = readResults(t, dir)
	require.Len(t, got, 3)
	assert.Equal(t, "api-0", got[2].Resource.Name, "after the restart, only the new report's result")
}
