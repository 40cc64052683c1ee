// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadatatest"
)

const podReport = `
apiVersion: wgpolicyk8s.io/v1alpha2
kind: PolicyReport
metadata:
  name: %s
  namespace: shop
scope:
  apiVersion: v1
  kind: Pod
  namespace: shop
  name: cart-7d9f
  uid: 11111111-2222-3333-4444-555555555555
results:
- source: kyverno
  policy: disallow-privileged
  rule: privileged-containers
  category: Pod Security Standards (Baseline)
  severity: high
  result: %s
  message: privileged mode is disallowed
  scored: true
  timestamp: {seconds: 1763800000, nanos: 0}
- source: kyverno
  policy: require-labels
  rule: check-team
  result: fail
  message: label 'team' is required
  resources:
  - {apiVersion: v1, kind: Pod, namespace: shop, name: cart-7d9f}
  - {apiVersion: v1, kind: Pod, namespace: shop, name: cart-8e0a}
`

func TestPolicyReportCreateUpdateDelete(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	tr := startReceiver(t, testConfig(t), apiserver.AdminToken, "")

	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "cart", "fail")))
	recs := tr.waitRecords(3)
	assert.Equal(t, []string{
		"new kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> fail",
		"new kyverno require-labels/check-team Pod/shop/cart-7d9f -> fail",
		"new kyverno require-labels/check-team Pod/shop/cart-8e0a -> fail",
	}, summaries(recs))
	// Every field of the model, and the source's result as the body.
	scored := true
	first := recs[0]
	assert.Equal(t, policyresult.Result{
		Cluster: "test-cluster", Source: "kyverno", Policy: "disallow-privileged", Rule: "privileged-containers",
		Category: "Pod Security Standards (Baseline)", Severity: policyresult.SeverityHigh, Outcome: policyresult.OutcomeFail,
		Scored: &scored, Message: "privileged mode is disallowed", State: policyresult.StateNew,
		Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-7d9f", UID: "11111111-2222-3333-4444-555555555555"},
		Report:    policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "cart"},
		Timestamp: first.Timestamp,
	}, first.Result)
	assert.Equal(t, int64(1763800000), first.Timestamp.Unix())
	assert.Equal(t, "privileged-containers", first.Body["rule"])
	assert.Equal(t, map[string]any{"seconds": int64(1763800000), "nanos": int64(0)}, first.Body["timestamp"])

	// The same object applied again: nothing changed, nothing is emitted.
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "cart", "fail")))
	tr.quietAfter(seenVersion{policyReportGVR, currentRV(t, policyReportGVR, "shop", "cart")})

	// One outcome changes, one resource goes away.
	changed := object(t, fmt.Sprintf(podReport, "cart", "pass"))
	results := changed.Object["results"].([]any)
	res := results[1].(map[string]any)
	res["resources"] = res["resources"].([]any)[:1]
	cluster.Apply(t, policyReportGVR, changed)
	recs = tr.waitRecords(2)
	assert.Equal(t, []string{
		"changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		"resolved kyverno require-labels/check-team Pod/shop/cart-8e0a -> fail",
	}, summaries(recs))
	assert.Equal(t, recs[1].Key(), (&policyresult.Result{Cluster: "test-cluster", Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-8e0a"}}).Key(), "a resolved record has the key of the result it resolves")

	cluster.Delete(t, policyReportGVR, "shop", "cart")
	recs = tr.waitRecords(2)
	assert.Equal(t, []string{
		"resolved kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		"resolved kyverno require-labels/check-team Pod/shop/cart-7d9f -> fail",
	}, summaries(recs))
}

const clusterReport = `
apiVersion: wgpolicyk8s.io/v1alpha2
kind: ClusterPolicyReport
metadata:
  name: %s
results:
- source: kube-bench
  policy: cis-1.8
  rule: "1.2.%d"
  result: warn
  message: ensure the admission control plugin AlwaysAdmit is not set
`

func TestRestartWithStorageEmitsExactlyWhatChanged(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	storageDir := t.TempDir()

	tr := startReceiver(t, testConfig(t), apiserver.AdminToken, storageDir)
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "r1", "fail")))
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "r2", "fail")))
	cluster.Apply(t, clusterPolicyReportGVR, object(t, fmt.Sprintf(clusterReport, "cis-a", 1)))
	tr.waitRecords(7)
	tr.stop()

	// While the receiver is down: one outcome changes, one report is deleted, one is created, one is untouched.
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "r1", "pass")))
	cluster.Delete(t, clusterPolicyReportGVR, "", "cis-a")
	cluster.Apply(t, clusterPolicyReportGVR, object(t, fmt.Sprintf(clusterReport, "cis-b", 2)))

	tr = startReceiver(t, testConfig(t), apiserver.AdminToken, storageDir)
	recs := tr.waitRecords(3)
	assert.Equal(t, []string{
		"changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		"new kube-bench cis-1.8/1.2.2 // -> warn",
		"resolved kube-bench cis-1.8/1.2.1 // -> warn",
	}, summaries(recs))
	assert.Equal(t, "r1", recs[0].Report.Name)
	assert.Equal(t, policyresult.Report{Kind: "ClusterPolicyReport", Name: "cis-b"}, recs[1].Report)
	tr.stop()

	// A restart with nothing changed emits nothing.
	tr = startReceiver(t, testConfig(t), apiserver.AdminToken, storageDir)
	tr.quietAfter(seenVersion{gvr: policyReportGVR}, seenVersion{gvr: clusterPolicyReportGVR})
	tr.stop()
	cluster.Delete(t, policyReportGVR, "shop", "r1")
	cluster.Delete(t, policyReportGVR, "shop", "r2")
	cluster.Delete(t, clusterPolicyReportGVR, "", "cis-b")
}

func TestInitialSyncNoneEmitsOnlyLaterChanges(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.CreateNamespace(t, "shop")
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "existing", "fail")))
	t.Cleanup(func() { cluster.Delete(t, policyReportGVR, "shop", "existing") })

	cfg := testConfig(t)
	cfg.InitialSync = InitialSyncNone
	tr := startReceiver(t, cfg, apiserver.AdminToken, "")
	tr.quietAfter(seenVersion{gvr: policyReportGVR}, seenVersion{gvr: clusterPolicyReportGVR})
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "existing", "pass")))
	recs := tr.waitRecords(1)
	assert.Equal(t, "changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass", summary(recs[0]))
}

const openReport = `
apiVersion: openreports.io/v1alpha1
kind: Report
metadata:
  name: cis-apiserver
  namespace: shop
source: kube-bench-adapter
scope: {apiVersion: v1, kind: Node, name: node-1}
results:
- policy: "1.2.1"
  rule: anonymous-auth
  result: fail
  message: --anonymous-auth is not set to false
- policy: "1.2.2"
  source: custom-check
  result: pass
`

func TestCRDInstalledAfterStartAndRemoved(t *testing.T) {
	needCluster(t)
	cluster.CreateNamespace(t, "shop")
	cfg := testConfig(t)
	cfg.Kinds = KindsConfig{OpenReports: true}
	tr := startReceiver(t, cfg, apiserver.AdminToken, "")
	// Nothing arrives once discovery answered (the CRD may be left installed by another test of the shared
	// control plane, which then is listed, without reports of this test's label).
	tr.waitDiscovered(openReportGVR)
	tr.quietAfter()

	cluster.InstallCRDs(t, crdFile("openreports.io"))
	cluster.Apply(t, openReportGVR, object(t, openReport))
	recs := tr.waitRecords(2)
	assert.Equal(t, []string{
		"new kube-bench-adapter 1.2.1/anonymous-auth Node//node-1 -> fail",
		"new custom-check 1.2.2/ Node//node-1 -> pass",
	}, summaries(recs))

	cluster.DeleteCRDs(t, crdFile("openreports.io"))
	recs = tr.waitRecords(2)
	assert.Equal(t, []string{
		"resolved kube-bench-adapter 1.2.1/anonymous-auth Node//node-1 -> fail",
		"resolved custom-check 1.2.2/ Node//node-1 -> pass",
	}, summaries(recs))
	assert.NotEqual(t, componentstatus.StatusRecoverableError, lastStatus(tr))
}

const vulnReport = `
apiVersion: aquasecurity.github.io/v1alpha1
kind: VulnerabilityReport
metadata:
  name: replicaset-web-6d4cf56db6-nginx
  namespace: shop
  labels:
    trivy-operator.resource.kind: ReplicaSet
    trivy-operator.resource.name: web-6d4cf56db6
    trivy-operator.resource.namespace: shop
    trivy-operator.container.name: nginx
report:
  vulnerabilities:
  - vulnerabilityID: CVE-2026-0001
    resource: openssl
    installedVersion: 3.0.1
    severity: CRITICAL
    title: buffer overflow
`

func TestForbiddenKindDoesNotStopTheOthers(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("wgpolicyk8s.io"))
	cluster.InstallCRDs(t, crdFile("aquasecurity.github.io"))
	cluster.CreateNamespace(t, "shop")
	read := []string{"get", "list", "watch"}
	cluster.Grant(t, "reports-reader", apiserver.ReaderUser, []rbacv1.PolicyRule{
		{APIGroups: []string{"wgpolicyk8s.io"}, Resources: []string{"policyreports", "clusterpolicyreports"}, Verbs: read},
	})
	cluster.Apply(t, policyReportGVR, object(t, fmt.Sprintf(podReport, "visible", "fail")))
	cluster.Apply(t, vulnReportGVR, object(t, vulnReport))
	t.Cleanup(func() {
		cluster.Delete(t, policyReportGVR, "shop", "visible")
		cluster.Delete(t, vulnReportGVR, "shop", "replicaset-web-6d4cf56db6-nginx")
	})

	cfg := testConfig(t)
	cfg.Kinds = KindsConfig{PolicyReports: true, VulnerabilityReports: true}
	tr := newTestReceiver(t, cfg, cluster.Kubeconfig(t, apiserver.ReaderToken), "", map[component.ID]component.Component{}, nil)
	// Retry the forbidden kind quickly, so that the grant below takes effect within the test.
	tr.rcv.retry.max = 2 * time.Second
	tr.start()
	recs := tr.waitRecords(3)
	for _, r := range recs {
		assert.Equal(t, "kyverno", r.Source)
	}
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusRecoverableError }, 10*time.Second, 100*time.Millisecond)
	assert.Contains(t, tr.host.Last().Err().Error(), "vulnerabilityreports.aquasecurity.github.io")
	assert.Contains(t, tr.host.Last().Err().Error(), "forbidden")

	// Granting the missing right heals the receiver without a restart.
	cluster.Grant(t, "reports-reader", apiserver.ReaderUser, []rbacv1.PolicyRule{
		{APIGroups: []string{"wgpolicyk8s.io"}, Resources: []string{"policyreports", "clusterpolicyreports"}, Verbs: read},
		{APIGroups: []string{"aquasecurity.github.io"}, Resources: []string{"vulnerabilityreports", "clustervulnerabilityreports"}, Verbs: read},
	})
	recs = tr.waitRecordsWithin(1, 30*time.Second)
	assert.Equal(t, "trivy-operator", recs[0].Source)
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusOK }, 10*time.Second, 100*time.Millisecond)
}

func lastStatus(tr *testReceiver) componentstatus.Status {
	if ev := tr.host.Last(); ev != nil {
		return ev.Status()
	}
	return componentstatus.StatusNone
}

func TestUnreachableAPIServerIsARecoverableStatus(t *testing.T) {
	// No control plane needed: a kubeconfig naming a port nobody listens on.
	port := collectortest.FreePort(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, port)), 0o600))
	t.Setenv("KUBECONFIG", path)
	host := statustest.NewHost(nil)
	tel := componenttest.NewTelemetry()
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	rcv, err := newReceiver(cfg, metadatatest.NewSettings(tel), new(consumertest.LogsSink))
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), host), "an unreachable API server does not fail the collector")
	require.Eventually(t, func() bool {
		ev := host.Last()
		return ev != nil && ev.Status() == componentstatus.StatusRecoverableError && strings.Contains(ev.Err().Error(), "connection refused")
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, rcv.Shutdown(context.Background()))
}
