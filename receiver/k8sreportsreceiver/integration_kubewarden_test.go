// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestKubewardenAuditRuns follows Kubewarden's reports through audit runs in the API server: the first run
// creates them, a run that changes no verdict rewrites them all and must emit nothing, a changed verdict is
// one changed record, and deleting the reports resolves their results.
func TestKubewardenAuditRuns(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	tr := startReceiver(t, testConfig(t), apiserver.AdminToken, "")

	type report struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}
	var reports []report
	for _, c := range kubewardenCases {
		obj := kubewardenReport(t, c.file)
		labels := obj.GetLabels()
		labels["otelcol-test"] = testLabel(t)
		obj.SetLabels(labels)
		reports = append(reports, report{c.gvr, obj})
		t.Cleanup(func() { cluster.Delete(t, c.gvr, obj.GetNamespace(), obj.GetName()) })
	}
	applyAll := func() []seenVersion {
		var versions []seenVersion
		for _, r := range reports {
			cluster.Apply(t, r.gvr, r.obj)
			versions = append(versions, seenVersion{r.gvr, currentRV(t, r.gvr, r.obj.GetNamespace(), r.obj.GetName())})
		}
		return versions
	}

	applyAll()
	recs := tr.waitRecords(3)
	assert.Equal(t, []string{
		"new kubewarden clusterwide-disallow-privileged/ Deployment/shop/cart -> fail",
		"new kubewarden namespaced-shop-require-owner-label/ Deployment/shop/cart -> pass",
		"new kubewarden clusterwide-namespace-cost-center/ Namespace//shop -> error",
	}, summaries(recs))
	scored := true
	assert.Equal(t, policyresult.Result{
		Cluster: "test-cluster", Source: "kubewarden", Policy: "clusterwide-namespace-cost-center",
		Severity: policyresult.SeverityInfo, Outcome: policyresult.OutcomeError, Scored: &scored,
		Message: `cannot reach policy server "default": connection refused`, State: policyresult.StateNew,
		Resource:  kubewardenCases[1].subject,
		Report:    policyresult.Report{Kind: "ClusterPolicyReport", Name: "a47f19d2-6c0b-4e35-b8a9-3f5d7e9c1b24"},
		Timestamp: recs[2].Timestamp,
	}, recs[2].Result)
	assert.Equal(t, int64(1762300000), recs[2].Timestamp.Unix())

	// The next audit run: every report rewritten, no verdict changed.
	for _, r := range reports {
		nextAuditRun(t, r.obj, "0f3e9b57-2222-4c2a-8d6e-7b9a0c1d2e02")
	}
	tr.quietAfter(applyAll()...)

	// The run after: one verdict changed.
	for _, r := range reports {
		nextAuditRun(t, r.obj, "0f3e9b57-3333-4c2a-8d6e-7b9a0c1d2e03")
	}
	setKubewardenOutcome(t, reports[0].obj, "clusterwide-disallow-privileged", "pass")
	applyAll()
	assert.Equal(t, []string{"changed kubewarden clusterwide-disallow-privileged/ Deployment/shop/cart -> pass"},
		summaries(tr.waitRecords(1)))

	for _, r := range reports {
		cluster.Delete(t, r.gvr, r.obj.GetNamespace(), r.obj.GetName())
	}
	assert.Equal(t, []string{
		"resolved kubewarden clusterwide-disallow-privileged/ Deployment/shop/cart -> pass",
		"resolved kubewarden namespaced-shop-require-owner-label/ Deployment/shop/cart -> pass",
		"resolved kubewarden clusterwide-namespace-cost-center/ Namespace//shop -> error",
	}, summaries(tr.waitRecords(3)))
}
