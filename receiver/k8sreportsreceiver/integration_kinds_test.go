// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/k8stest"
)

// kindCase is one report kind's life in the API server: created, updated, deleted, with the records each step
// must produce, exactly.
type kindCase struct {
	name   string
	crds   string
	kinds  KindsConfig
	gvr    schema.GroupVersionResource
	status bool // the results live in the status subresource
	// beforeStatus are the records of the object created without its status yet, as its controller creates it.
	beforeStatus []string
	create       string
	update       string
	created      []string
	updated      []string
	resolved     []string
}

var kindCases = []kindCase{{
	name: "open_reports", crds: "openreports.io", kinds: KindsConfig{OpenReports: true},
	gvr: schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"},
	create: `
apiVersion: openreports.io/v1alpha1
kind: ClusterReport
metadata: {name: cis-nodes}
source: kube-bench-adapter
results:
- {policy: "4.2.1", rule: anonymous-auth, result: fail, severity: high, resources: [{apiVersion: v1, kind: Node, name: node-1}, {apiVersion: v1, kind: Node, name: node-2}]}`,
	update: `
apiVersion: openreports.io/v1alpha1
kind: ClusterReport
metadata: {name: cis-nodes}
source: kube-bench-adapter
results:
- {policy: "4.2.1", rule: anonymous-auth, result: fail, severity: high, resources: [{apiVersion: v1, kind: Node, name: node-1}]}
- {policy: "4.2.1", rule: anonymous-auth, result: pass, severity: high, resources: [{apiVersion: v1, kind: Node, name: node-2}]}`,
	created: []string{
		"new kube-bench-adapter 4.2.1/anonymous-auth Node//node-1 -> fail",
		"new kube-bench-adapter 4.2.1/anonymous-auth Node//node-2 -> fail",
	},
	updated: []string{"changed kube-bench-adapter 4.2.1/anonymous-auth Node//node-2 -> pass"},
	resolved: []string{
		"resolved kube-bench-adapter 4.2.1/anonymous-auth Node//node-1 -> fail",
		"resolved kube-bench-adapter 4.2.1/anonymous-auth Node//node-2 -> pass",
	},
}, {
	name: "compliance_remediations", crds: "compliance.openshift.io", kinds: KindsConfig{ComplianceRemediations: true},
	gvr:    schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "complianceremediations"},
	status: true,
	create: `
apiVersion: compliance.openshift.io/v1alpha1
kind: ComplianceRemediation
metadata:
  name: ocp4-cis-api-server-encryption-provider-cipher
  namespace: shop
  labels: {compliance.openshift.io/scan-name: ocp4-cis}
spec:
  apply: false
  current: {object: {apiVersion: config.openshift.io/v1, kind: APIServer, metadata: {name: cluster}, spec: {encryption: {type: aescbc}}}}
status: {applicationState: NotApplied}`,
	update: `
apiVersion: compliance.openshift.io/v1alpha1
kind: ComplianceRemediation
metadata:
  name: ocp4-cis-api-server-encryption-provider-cipher
  namespace: shop
  labels: {compliance.openshift.io/scan-name: ocp4-cis}
spec:
  apply: true
  current: {object: {apiVersion: config.openshift.io/v1, kind: APIServer, metadata: {name: cluster}, spec: {encryption: {type: aescbc}}}}
status: {applicationState: Applied}`,
	beforeStatus: []string{"new compliance-operator ocp4-cis/ocp4-cis-api-server-encryption-provider-cipher APIServer//cluster -> "},
	created:      []string{"changed compliance-operator ocp4-cis/ocp4-cis-api-server-encryption-provider-cipher APIServer//cluster -> warn"},
	updated:      []string{"changed compliance-operator ocp4-cis/ocp4-cis-api-server-encryption-provider-cipher APIServer//cluster -> pass"},
	resolved:     []string{"resolved compliance-operator ocp4-cis/ocp4-cis-api-server-encryption-provider-cipher APIServer//cluster -> pass"},
}, {
	name: "ephemeral_reports", crds: "reports.kyverno.io", kinds: KindsConfig{EphemeralReports: true},
	gvr: schema.GroupVersionResource{Group: "reports.kyverno.io", Version: "v1", Resource: "ephemeralreports"},
	create: `
apiVersion: reports.kyverno.io/v1
kind: EphemeralReport
metadata: {name: e1, namespace: shop}
spec:
  owner: {apiVersion: apps/v1, kind: Deployment, name: web, uid: 0b7f7c1e-0000-4000-8000-000000000001}
  results:
  - {source: kyverno, policy: require-requests, rule: check-cpu, result: fail, message: cpu request missing}
  - {source: kyverno, policy: require-requests, rule: check-memory, result: pass}`,
	update: `
apiVersion: reports.kyverno.io/v1
kind: EphemeralReport
metadata: {name: e1, namespace: shop}
spec:
  owner: {apiVersion: apps/v1, kind: Deployment, name: web, uid: 0b7f7c1e-0000-4000-8000-000000000001}
  results:
  - {source: kyverno, policy: require-requests, rule: check-cpu, result: pass}
  - {source: kyverno, policy: require-requests, rule: check-memory, result: pass}`,
	created: []string{
		"new kyverno require-requests/check-cpu Deployment//web -> fail",
		"new kyverno require-requests/check-memory Deployment//web -> pass",
	},
	updated: []string{"changed kyverno require-requests/check-cpu Deployment//web -> pass"},
	resolved: []string{
		"resolved kyverno require-requests/check-cpu Deployment//web -> pass",
		"resolved kyverno require-requests/check-memory Deployment//web -> pass",
	},
}, {
	name: "vulnerability_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{VulnerabilityReports: true},
	gvr:    vulnReportGVR,
	create: vulnReport,
	update: vulnReport + `
  - vulnerabilityID: CVE-2026-0002
    resource: zlib
    installedVersion: 1.2.13
    severity: LOW
    title: integer overflow`,
	created: []string{"new trivy-operator CVE-2026-0001/nginx/openssl ReplicaSet/shop/web-6d4cf56db6 -> fail"},
	updated: []string{"new trivy-operator CVE-2026-0002/nginx/zlib ReplicaSet/shop/web-6d4cf56db6 -> fail"},
	resolved: []string{
		"resolved trivy-operator CVE-2026-0001/nginx/openssl ReplicaSet/shop/web-6d4cf56db6 -> fail",
		"resolved trivy-operator CVE-2026-0002/nginx/zlib ReplicaSet/shop/web-6d4cf56db6 -> fail",
	},
}, {
	name: "config_audit_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{ConfigAuditReports: true},
	gvr: schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: "configauditreports"},
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ConfigAuditReport
metadata:
  name: pod-api
  namespace: shop
  labels: {trivy-operator.resource.kind: Pod, trivy-operator.resource.name: api, trivy-operator.resource.namespace: shop}
report:
  checks:
  - {checkID: KSV001, title: Process can elevate its own privileges, severity: MEDIUM, category: Kubernetes Security Check, success: false, messages: ["allowPrivilegeEscalation should be false"]}
  - {checkID: KSV003, title: Default capabilities not dropped, severity: LOW, category: Kubernetes Security Check, success: true}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ConfigAuditReport
metadata:
  name: pod-api
  namespace: shop
  labels: {trivy-operator.resource.kind: Pod, trivy-operator.resource.name: api, trivy-operator.resource.namespace: shop}
report:
  checks:
  - {checkID: KSV001, title: Process can elevate its own privileges, severity: MEDIUM, category: Kubernetes Security Check, success: true}`,
	created: []string{
		"new trivy-operator KSV001/ Pod/shop/api -> fail",
		"new trivy-operator KSV003/ Pod/shop/api -> pass",
	},
	updated: []string{
		"changed trivy-operator KSV001/ Pod/shop/api -> pass",
		"resolved trivy-operator KSV003/ Pod/shop/api -> pass",
	},
	resolved: []string{"resolved trivy-operator KSV001/ Pod/shop/api -> pass"},
}, {
	name: "compliance_check_results", crds: "compliance.openshift.io", kinds: KindsConfig{ComplianceCheckResults: true},
	gvr: schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "compliancecheckresults"},
	create: `
apiVersion: compliance.openshift.io/v1alpha1
kind: ComplianceCheckResult
metadata:
  name: ocp4-cis-api-server-anonymous-auth
  namespace: shop
  labels: {compliance.openshift.io/scan-name: ocp4-cis, compliance.openshift.io/suite: cis-compliance}
id: xccdf_org.ssgproject.content_rule_api_server_anonymous_auth
status: FAIL
severity: medium
description: |-
  Ensure that the --anonymous-auth argument is set to false
  Longer explanation.`,
	update: `
apiVersion: compliance.openshift.io/v1alpha1
kind: ComplianceCheckResult
metadata:
  name: ocp4-cis-api-server-anonymous-auth
  namespace: shop
  labels: {compliance.openshift.io/scan-name: ocp4-cis, compliance.openshift.io/suite: cis-compliance}
id: xccdf_org.ssgproject.content_rule_api_server_anonymous_auth
status: MANUAL
severity: medium
description: Ensure that the --anonymous-auth argument is set to false`,
	created:  []string{"new compliance-operator ocp4-cis/xccdf_org.ssgproject.content_rule_api_server_anonymous_auth // -> fail"},
	updated:  []string{"changed compliance-operator ocp4-cis/xccdf_org.ssgproject.content_rule_api_server_anonymous_auth // -> skip"},
	resolved: []string{"resolved compliance-operator ocp4-cis/xccdf_org.ssgproject.content_rule_api_server_anonymous_auth // -> skip"},
}, {
	name: "gatekeeper_constraints", crds: "constraints.gatekeeper.sh", kinds: KindsConfig{GatekeeperConstraints: true},
	gvr:    schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: "k8srequiredlabels"},
	status: true,
	create: `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: all-must-have-owner}
spec: {match: {kinds: [{apiGroups: [""], kinds: [Namespace]}]}, parameters: {labels: [{key: owner}]}}
status:
  auditTimestamp: "2026-11-22T08:00:00Z"
  totalViolations: 2
  violations:
  - {enforcementAction: deny, group: "", version: v1, kind: Namespace, name: shop, message: 'you must provide labels: {"owner"}'}
  - {enforcementAction: deny, group: "", version: v1, kind: Namespace, name: payments, message: 'you must provide labels: {"owner"}'}`,
	update: `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: all-must-have-owner}
spec: {match: {kinds: [{apiGroups: [""], kinds: [Namespace]}]}, parameters: {labels: [{key: owner}]}}
status:
  auditTimestamp: "2026-11-22T09:00:00Z"
  totalViolations: 1
  violations:
  - {enforcementAction: deny, group: "", version: v1, kind: Namespace, name: shop, message: 'you must provide labels: {"owner"}'}`,
	created: []string{
		"new gatekeeper K8sRequiredLabels/all-must-have-owner Namespace//payments -> fail",
		"new gatekeeper K8sRequiredLabels/all-must-have-owner Namespace//shop -> fail",
	},
	updated:  []string{"resolved gatekeeper K8sRequiredLabels/all-must-have-owner Namespace//payments -> fail"},
	resolved: []string{"resolved gatekeeper K8sRequiredLabels/all-must-have-owner Namespace//shop -> fail"},
}}

func TestEveryKindCreateUpdateDelete(t *testing.T) {
	needCluster(t)
	cluster.CreateNamespace(t, "shop")
	for _, kc := range kindCases {
		t.Run(kc.name, func(t *testing.T) {
			cluster.InstallCRDs(t, crdFile(kc.crds))
			cfg := testConfig(t)
			cfg.Kinds = kc.kinds
			tr := startReceiver(t, cfg, k8stest.AdminToken, "")
			apply := func(yml string, before []string) {
				obj := object(t, yml)
				cluster.Apply(t, kc.gvr, obj)
				if len(before) > 0 {
					assert.Equal(t, before, summaries(tr.waitRecords(len(before))), "before the status")
				}
				if kc.status {
					cluster.ApplyStatus(t, kc.gvr, obj)
				}
			}

			apply(kc.create, kc.beforeStatus)
			assert.Equal(t, kc.created, summaries(tr.waitRecords(len(kc.created))), "create")
			apply(kc.update, nil)
			assert.Equal(t, kc.updated, summaries(tr.waitRecords(len(kc.updated))), "update")
			obj := object(t, kc.create)
			cluster.Delete(t, kc.gvr, obj.GetNamespace(), obj.GetName())
			assert.Equal(t, kc.resolved, summaries(tr.waitRecords(len(kc.resolved))), "delete")
		})
	}
}

func TestMalformedReportIsSkippedAndCounted(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("aquasecurity.github.io"))
	cluster.CreateNamespace(t, "shop")
	cfg := testConfig(t)
	cfg.Kinds = KindsConfig{VulnerabilityReports: true}
	tr := startReceiver(t, cfg, k8stest.AdminToken, "")

	bad := object(t, `
apiVersion: aquasecurity.github.io/v1alpha1
kind: VulnerabilityReport
metadata: {name: broken, namespace: shop}
report: {vulnerabilities: "not a list"}`)
	cluster.Apply(t, vulnReportGVR, bad)
	cluster.Apply(t, vulnReportGVR, object(t, vulnReport))
	t.Cleanup(func() {
		cluster.Delete(t, vulnReportGVR, "shop", "broken")
		cluster.Delete(t, vulnReportGVR, "shop", "replicaset-web-6d4cf56db6-nginx")
	})
	recs := tr.waitRecords(1)
	assert.Equal(t, "CVE-2026-0001", recs[0].Policy, "the good report flows past the bad one")
	assertErrorCount(t, tr, "vulnerability_reports", "malformed", 1)
}
