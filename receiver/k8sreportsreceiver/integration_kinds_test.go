// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
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
	// inspect, when set, checks the created records beyond their summaries.
	inspect func(t *testing.T, created []record)
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
	// The scan is created by its suite without a status; the record comes with the completed run, the next
	// run gives the next record, and deleting the scan resolves nothing.
	name: "compliance_scans", crds: "compliance.openshift.io", kinds: KindsConfig{ComplianceScans: true},
	gvr:     schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "compliancescans"},
	status:  true,
	create:  fmt.Sprintf(complianceScanRun, 0, "2026-11-20T01:00:03Z", "2026-11-20T01:04:41Z"),
	update:  fmt.Sprintf(complianceScanRun, 1, "2026-11-21T01:00:02Z", "2026-11-21T01:04:40Z"),
	created: []string{"scan compliance-operator ocp4-cis-node-worker run 0 -> fail"},
	updated: []string{"scan compliance-operator ocp4-cis-node-worker run 1 -> fail"},
	inspect: func(t *testing.T, created []record) {
		s := created[0].Scan
		assert.Equal(t, []string{"xccdf_org.ssgproject.content_profile_cis-node"}, s.Profiles)
		assert.Equal(t, "cis-compliance", s.Suite)
		assert.Equal(t, int64(112), *s.Checks)
		assert.Equal(t, policyresult.Report{Kind: "ComplianceScan", Namespace: "shop", Name: "ocp4-cis-node-worker"}, created[0].Report)
	},
}, {
	name: "compliance_suites", crds: "compliance.openshift.io", kinds: KindsConfig{ComplianceScans: true},
	gvr:     schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "compliancesuites"},
	status:  true,
	create:  fmt.Sprintf(complianceSuiteRun, "COMPLIANT", "", 0, "2026-11-20T01:03:10Z"),
	update:  fmt.Sprintf(complianceSuiteRun, "ERROR", "Timeout while waiting for the scan pod to be finished.", 1, "2026-11-21T01:30:00Z"),
	created: []string{"scan compliance-operator cis-compliance of 1 scans -> pass"},
	updated: []string{"scan compliance-operator cis-compliance of 1 scans -> error"},
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
}, {
	name: "cluster_vulnerability_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{VulnerabilityReports: true},
	gvr:    trivyGVR("clustervulnerabilityreports"),
	create: clusterVulnReport,
	update: clusterVulnReport + `
  - {vulnerabilityID: CVE-2026-1002, resource: github.com/containerd/containerd, installedVersion: 2.1.0, fixedVersion: "", severity: MEDIUM, title: containerd image pull exhaustion}`,
	created: []string{"new trivy-operator CVE-2026-1001/k8s-cluster/k8s.io/kubelet ClusterSbomReport//5d8f7b9c6 -> fail"},
	updated: []string{"new trivy-operator CVE-2026-1002/k8s-cluster/github.com/containerd/containerd ClusterSbomReport//5d8f7b9c6 -> fail"},
	resolved: []string{
		"resolved trivy-operator CVE-2026-1001/k8s-cluster/k8s.io/kubelet ClusterSbomReport//5d8f7b9c6 -> fail",
		"resolved trivy-operator CVE-2026-1002/k8s-cluster/github.com/containerd/containerd ClusterSbomReport//5d8f7b9c6 -> fail",
	},
	inspect: func(t *testing.T, created []record) {
		score := 8.1
		assert.Equal(t, &policyresult.Vulnerability{ID: "CVE-2026-1001", Score: &score, ScoreVersion: "3",
			Reference: "https://avd.aquasec.com/nvd/cve-2026-1001", PackageName: "k8s.io/kubelet", PackageVersion: "1.35.0",
			PackageFixedVersion: "1.35.2"}, created[0].Vulnerability)
	},
}, {
	name: "cluster_config_audit_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{ConfigAuditReports: true},
	gvr: trivyGVR("clusterconfigauditreports"),
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterConfigAuditReport
metadata:
  name: persistentvolume-pv-data-1
  labels: {trivy-operator.resource.kind: PersistentVolume, trivy-operator.resource.name: pv-data-1, trivy-operator.resource.namespace: ""}
report:
  updateTimestamp: "2026-11-22T08:00:00Z"
  checks:
  - {checkID: KSV121, title: Disallowed volumes mounted, severity: HIGH, category: Kubernetes Security Check, success: false, messages: ["PersistentVolume 'pv-data-1' should not mount a hostPath"]}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterConfigAuditReport
metadata:
  name: persistentvolume-pv-data-1
  labels: {trivy-operator.resource.kind: PersistentVolume, trivy-operator.resource.name: pv-data-1, trivy-operator.resource.namespace: ""}
report:
  updateTimestamp: "2026-11-22T09:00:00Z"
  checks:
  - {checkID: KSV121, title: Disallowed volumes mounted, severity: HIGH, category: Kubernetes Security Check, success: true}`,
	created:  []string{"new trivy-operator KSV121/ PersistentVolume//pv-data-1 -> fail"},
	updated:  []string{"changed trivy-operator KSV121/ PersistentVolume//pv-data-1 -> pass"},
	resolved: []string{"resolved trivy-operator KSV121/ PersistentVolume//pv-data-1 -> pass"},
}, {
	name: "exposed_secret_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{ExposedSecretReports: true},
	gvr: trivyGVR("exposedsecretreports"),
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ExposedSecretReport
metadata:
  name: replicaset-web-6d4cf56db6-nginx
  namespace: shop
  labels: {trivy-operator.resource.kind: ReplicaSet, trivy-operator.resource.name: web-6d4cf56db6, trivy-operator.resource.namespace: shop, trivy-operator.container.name: nginx}
report:
  updateTimestamp: "2026-11-22T08:00:00Z"
  secrets:
  - {target: /app/.env, ruleID: github-pat, title: GitHub Personal Access Token, category: GitHub, severity: CRITICAL, match: "GITHUB_TOKEN=ghp_****"}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ExposedSecretReport
metadata:
  name: replicaset-web-6d4cf56db6-nginx
  namespace: shop
  labels: {trivy-operator.resource.kind: ReplicaSet, trivy-operator.resource.name: web-6d4cf56db6, trivy-operator.resource.namespace: shop, trivy-operator.container.name: nginx}
report:
  updateTimestamp: "2026-11-22T09:00:00Z"
  secrets:
  - {target: /root/.aws/credentials, ruleID: aws-access-key-id, title: AWS Access Key ID, category: AWS, severity: CRITICAL, match: "aws_access_key_id=****"}`,
	created: []string{"new trivy-operator github-pat/nginx//app/.env ReplicaSet/shop/web-6d4cf56db6 -> fail"},
	updated: []string{
		"new trivy-operator aws-access-key-id/nginx//root/.aws/credentials ReplicaSet/shop/web-6d4cf56db6 -> fail",
		"resolved trivy-operator github-pat/nginx//app/.env ReplicaSet/shop/web-6d4cf56db6 -> fail",
	},
	resolved: []string{"resolved trivy-operator aws-access-key-id/nginx//root/.aws/credentials ReplicaSet/shop/web-6d4cf56db6 -> fail"},
}, {
	name: "rbac_assessment_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{RbacAssessmentReports: true},
	gvr: trivyGVR("rbacassessmentreports"),
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: RbacAssessmentReport
metadata:
  name: role-pod-reader
  namespace: shop
  labels: {trivy-operator.resource.kind: Role, trivy-operator.resource.name: pod-reader, trivy-operator.resource.namespace: shop}
report:
  checks:
  - {checkID: KSV113, title: Manage namespace secrets, severity: MEDIUM, category: Kubernetes Security Check, success: false, messages: ["Role permits management of secret(s)"]}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: RbacAssessmentReport
metadata:
  name: role-pod-reader
  namespace: shop
  labels: {trivy-operator.resource.kind: Role, trivy-operator.resource.name: pod-reader, trivy-operator.resource.namespace: shop}
report:
  checks:
  - {checkID: KSV113, title: Manage namespace secrets, severity: MEDIUM, category: Kubernetes Security Check, success: false, messages: ["Role permits management of secret(s) and configmap(s)"]}`,
	created:  []string{"new trivy-operator KSV113/ Role/shop/pod-reader -> fail"},
	updated:  []string{"changed trivy-operator KSV113/ Role/shop/pod-reader -> fail"},
	resolved: []string{"resolved trivy-operator KSV113/ Role/shop/pod-reader -> fail"},
}, {
	name: "cluster_rbac_assessment_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{RbacAssessmentReports: true},
	gvr: trivyGVR("clusterrbacassessmentreports"),
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterRbacAssessmentReport
metadata:
  name: clusterrole-5c7d9f8b6
  annotations: {trivy-operator.resource.name: "system:aggregate-to-edit"}
  labels: {trivy-operator.resource.kind: ClusterRole, trivy-operator.resource.name-hash: 5c7d9f8b6, trivy-operator.resource.namespace: ""}
report:
  checks:
  - {checkID: KSV050, title: Manage Kubernetes RBAC resources, severity: CRITICAL, category: Kubernetes Security Check, success: false, messages: ["ClusterRole 'system:aggregate-to-edit' should not manage roles"]}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterRbacAssessmentReport
metadata:
  name: clusterrole-5c7d9f8b6
  annotations: {trivy-operator.resource.name: "system:aggregate-to-edit"}
  labels: {trivy-operator.resource.kind: ClusterRole, trivy-operator.resource.name-hash: 5c7d9f8b6, trivy-operator.resource.namespace: ""}
report:
  checks:
  - {checkID: KSV050, title: Manage Kubernetes RBAC resources, severity: CRITICAL, category: Kubernetes Security Check, success: true, messages: [""]}`,
	created:  []string{"new trivy-operator KSV050/ ClusterRole//system:aggregate-to-edit -> fail"},
	updated:  []string{"changed trivy-operator KSV050/ ClusterRole//system:aggregate-to-edit -> pass"},
	resolved: []string{"resolved trivy-operator KSV050/ ClusterRole//system:aggregate-to-edit -> pass"},
}, {
	name: "infra_assessment_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{InfraAssessmentReports: true},
	gvr: trivyGVR("infraassessmentreports"),
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: InfraAssessmentReport
metadata:
  name: pod-etcd-cp-1
  namespace: shop
  labels: {trivy-operator.resource.kind: Pod, trivy-operator.resource.name: etcd-cp-1, trivy-operator.resource.namespace: shop}
report:
  checks:
  - {checkID: KCV0042, title: Ensure that the --cert-file and --key-file arguments are set, severity: LOW, category: Kubernetes Security Check, success: false, messages: ["Ensure that the --cert-file and --key-file arguments are set"]}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: InfraAssessmentReport
metadata:
  name: pod-etcd-cp-1
  namespace: shop
  labels: {trivy-operator.resource.kind: Pod, trivy-operator.resource.name: etcd-cp-1, trivy-operator.resource.namespace: shop}
report:
  checks:
  - {checkID: KCV0042, title: Ensure that the --cert-file and --key-file arguments are set, severity: LOW, category: Kubernetes Security Check, success: false, messages: ["Ensure that the --cert-file and --key-file arguments are set"]}
  - {checkID: KCV0043, title: Ensure that the --client-cert-auth argument is set to true, severity: LOW, category: Kubernetes Security Check, success: false, messages: ["Ensure that the --client-cert-auth argument is set to true"]}`,
	created: []string{"new trivy-operator KCV0042/ Pod/shop/etcd-cp-1 -> fail"},
	updated: []string{"new trivy-operator KCV0043/ Pod/shop/etcd-cp-1 -> fail"},
	resolved: []string{
		"resolved trivy-operator KCV0042/ Pod/shop/etcd-cp-1 -> fail",
		"resolved trivy-operator KCV0043/ Pod/shop/etcd-cp-1 -> fail",
	},
}, {
	name: "cluster_infra_assessments", crds: "aquasecurity.github.io", kinds: KindsConfig{InfraAssessmentReports: true},
	gvr: trivyGVR("clusterinfraassessmentreports"),
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterInfraAssessmentReport
metadata:
  name: node-cp-1
  labels: {trivy-operator.resource.kind: Node, trivy-operator.resource.name: cp-1, trivy-operator.resource.namespace: ""}
report:
  checks:
  - {checkID: KCV0079, title: Ensure that the --protect-kernel-defaults argument is set to true, severity: HIGH, category: Kubernetes Security Check, success: false, messages: ["Ensure that the --protect-kernel-defaults argument is set to true"]}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterInfraAssessmentReport
metadata:
  name: node-cp-1
  labels: {trivy-operator.resource.kind: Node, trivy-operator.resource.name: cp-1, trivy-operator.resource.namespace: ""}
report:
  checks:
  - {checkID: KCV0079, title: Ensure that the --protect-kernel-defaults argument is set to true, severity: HIGH, category: Kubernetes Security Check, success: true, messages: ["Ensure that the --protect-kernel-defaults argument is set to true"]}`,
	created:  []string{"new trivy-operator KCV0079/ Node//cp-1 -> fail"},
	updated:  []string{"changed trivy-operator KCV0079/ Node//cp-1 -> pass"},
	resolved: []string{"resolved trivy-operator KCV0079/ Node//cp-1 -> pass"},
}, {
	// Created by Helm with its spec only, then the operator writes the summary form; switching the report to
	// the detail form keeps the keys, and only the control whose count changed is a changed record.
	name: "cluster_compliance_reports", crds: "aquasecurity.github.io", kinds: KindsConfig{ClusterComplianceReports: true},
	gvr:    trivyGVR("clustercompliancereports"),
	status: true,
	create: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterComplianceReport
metadata: {name: k8s-nsa-1.0}
spec:
  reportType: summary
  compliance: {id: k8s-nsa-1.0, title: NSA Kubernetes Hardening Guidance v1.0, type: nsa}
status:
  updateTimestamp: "2026-11-22T08:00:00Z"
  summary: {failCount: 1, passCount: 2}
  summaryReport:
    id: k8s-nsa-1.0
    title: NSA Kubernetes Hardening Guidance v1.0
    controlCheck:
    - {id: "1.0", name: Non-root containers, severity: MEDIUM, totalFail: 3}
    - {id: "1.1", name: Immutable container file systems, severity: LOW, totalFail: 0}
    - {id: "6.0", name: Manual - Audit log path is configure, severity: MEDIUM}`,
	update: `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterComplianceReport
metadata: {name: k8s-nsa-1.0}
spec:
  reportType: all
  compliance: {id: k8s-nsa-1.0, title: NSA Kubernetes Hardening Guidance v1.0, type: nsa}
status:
  updateTimestamp: "2026-11-22T14:00:00Z"
  summary: {failCount: 1, passCount: 2}
  detailReport:
    id: k8s-nsa-1.0
    title: NSA Kubernetes Hardening Guidance v1.0
    results:
    - id: "1.0"
      name: Non-root containers
      severity: MEDIUM
      checks:
      - {checkID: AVD-KSV-0012, target: shop/replicaset-web-6d4cf56db6, title: Runs as root user, severity: MEDIUM, success: false}
    - id: "1.1"
      name: Immutable container file systems
      severity: LOW
      checks: [{checkID: "", severity: "", success: true}]
    - id: "6.0"
      name: Manual - Audit log path is configure
      severity: MEDIUM
      status: WARN
      checks: [{checkID: "", severity: "", success: true}]`,
	created: []string{
		"new trivy-operator k8s-nsa-1.0/1.0 // -> fail",
		"new trivy-operator k8s-nsa-1.0/1.1 // -> pass",
		"new trivy-operator k8s-nsa-1.0/6.0 // -> skip",
	},
	updated: []string{"changed trivy-operator k8s-nsa-1.0/1.0 // -> fail"},
	resolved: []string{
		"resolved trivy-operator k8s-nsa-1.0/1.0 // -> fail",
		"resolved trivy-operator k8s-nsa-1.0/1.1 // -> pass",
		"resolved trivy-operator k8s-nsa-1.0/6.0 // -> skip",
	},
	inspect: func(t *testing.T, created []record) {
		three, zero := int64(3), int64(0)
		assert.Equal(t, "Non-root containers: 3 failed", created[0].Message)
		assert.Equal(t, &three, created[0].FailedChecks)
		assert.Equal(t, &zero, created[1].FailedChecks)
		assert.Nil(t, created[2].FailedChecks, "a manual control is not evaluated")
		assert.Equal(t, policyresult.Report{Kind: "ClusterComplianceReport", Name: "k8s-nsa-1.0"}, created[0].Report)
	},
}}

// complianceScanRun is a ComplianceScan with one completed run: its index, start and end.
const complianceScanRun = `
apiVersion: compliance.openshift.io/v1alpha1
kind: ComplianceScan
metadata:
  name: ocp4-cis-node-worker
  namespace: shop
  labels: {compliance.openshift.io/suite: cis-compliance}
  annotations: {compliance.openshift.io/check-count: "112"}
spec: {scanType: Node, profile: xccdf_org.ssgproject.content_profile_cis-node, content: ssg-ocp4-ds.xml}
status: {phase: DONE, result: NON-COMPLIANT, currentIndex: %d, startTimestamp: %q, endTimestamp: %q}`

// complianceSuiteRun is a ComplianceSuite of one scan with one completed run: the result (the suite's and the
// scan's), the error message, the scan's index and end.
const complianceSuiteRun = `
apiVersion: compliance.openshift.io/v1alpha1
kind: ComplianceSuite
metadata: {name: cis-compliance, namespace: shop}
spec: {scans: [{name: ocp4-cis, scanType: Platform, profile: xccdf_org.ssgproject.content_profile_cis}]}
status:
  phase: DONE
  result: %[1]s
  errorMessage: %[2]q
  scanStatuses: [{name: ocp4-cis, phase: DONE, result: %[1]s, currentIndex: %[3]d, endTimestamp: %[4]q}]`

func trivyGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: resource}
}

// clusterVulnReport is trivy-operator's report on the cluster's own components (KBOM).
const clusterVulnReport = `
apiVersion: aquasecurity.github.io/v1alpha1
kind: ClusterVulnerabilityReport
metadata:
  name: clustersbomreport-5d8f7b9c6
  labels: {trivy-operator.resource.kind: ClusterSbomReport, trivy-operator.resource.name: 5d8f7b9c6, trivy-operator.resource.namespace: "", trivy-operator.container.name: k8s-cluster}
report:
  updateTimestamp: "2026-11-22T08:00:00Z"
  vulnerabilities:
  - {vulnerabilityID: CVE-2026-1001, resource: k8s.io/kubelet, installedVersion: 1.35.0, fixedVersion: 1.35.2, severity: HIGH, score: 8.1, title: kubelet path traversal, primaryLink: "https://avd.aquasec.com/nvd/cve-2026-1001"}`

func TestEveryKindCreateUpdateDelete(t *testing.T) {
	needCluster(t)
	cluster.CreateNamespace(t, "shop")
	for _, kc := range kindCases {
		t.Run(kc.name, func(t *testing.T) {
			cluster.InstallCRDs(t, crdFile(kc.crds))
			cfg := testConfig(t)
			cfg.Kinds = kc.kinds
			tr := startReceiver(t, cfg, apiserver.AdminToken, "")

			kc.apply(t, tr, kc.create, kc.beforeStatus)
			created := tr.waitRecords(len(kc.created))
			assert.Equal(t, kc.created, summaries(created), "create")
			if kc.inspect != nil {
				kc.inspect(t, created)
			}
			kc.apply(t, tr, kc.update, nil)
			assert.Equal(t, kc.updated, summaries(tr.waitRecords(len(kc.updated))), "update")
			kc.delete(t)
			kc.waitResolved(t, tr, "delete")
		})
	}
}

// TestEveryKindRestartWithStorage: what changes while the receiver is down, an update and then the deletion,
// is exactly what the next start with the same storage emits.
func TestEveryKindRestartWithStorage(t *testing.T) {
	needCluster(t)
	cluster.CreateNamespace(t, "shop")
	for _, kc := range kindCases {
		t.Run(kc.name, func(t *testing.T) {
			cluster.InstallCRDs(t, crdFile(kc.crds))
			storageDir := t.TempDir()
			start := func() *testReceiver {
				cfg := testConfig(t)
				cfg.Kinds = kc.kinds
				return startReceiver(t, cfg, apiserver.AdminToken, storageDir)
			}
			tr := start()
			kc.apply(t, tr, kc.create, kc.beforeStatus)
			assert.Equal(t, kc.created, summaries(tr.waitRecords(len(kc.created))), "create")
			tr.stop()

			kc.apply(t, tr, kc.update, nil)
			tr = start()
			assert.Equal(t, kc.updated, summaries(tr.waitRecords(len(kc.updated))), "updated while down")
			tr.stop()

			kc.delete(t)
			tr = start()
			kc.waitResolved(t, tr, "deleted while down")
		})
	}
}

// apply creates or updates the case's object, and its status as its controller would; before are the records
// of the object without its status, which a running receiver emits in between.
func (kc *kindCase) apply(t *testing.T, tr *testReceiver, yml string, before []string) {
	t.Helper()
	obj := object(t, yml)
	cluster.Apply(t, kc.gvr, obj)
	if len(before) > 0 {
		assert.Equal(t, before, summaries(tr.waitRecords(len(before))), "before the status")
	}
	if kc.status {
		cluster.ApplyStatus(t, kc.gvr, obj)
	}
}

// waitResolved waits for the records of the deletion. When there are none, it creates an object of the same
// resource that emits nothing (the case's object without its status) and checks that nothing arrived once the
// receiver handed that object over, which it does after the deletion.
func (kc *kindCase) waitResolved(t *testing.T, tr *testReceiver, msg string) {
	t.Helper()
	if len(kc.resolved) > 0 {
		assert.Equal(t, kc.resolved, summaries(tr.waitRecords(len(kc.resolved))), msg)
		return
	}
	require.True(t, kc.status, "a marker without records needs a kind whose records come with the status")
	marker := object(t, kc.create)
	marker.SetName("marker")
	delete(marker.Object, "status")
	cluster.Apply(t, kc.gvr, marker)
	t.Cleanup(func() { cluster.Delete(t, kc.gvr, marker.GetNamespace(), "marker") })
	tr.quietAfter(seenVersion{kc.gvr, currentRV(t, kc.gvr, marker.GetNamespace(), "marker")})
}

func (kc *kindCase) delete(t *testing.T) {
	t.Helper()
	obj := object(t, kc.create)
	cluster.Delete(t, kc.gvr, obj.GetNamespace(), obj.GetName())
}

func TestMalformedReportIsSkippedAndCounted(t *testing.T) {
	needCluster(t)
	cluster.InstallCRDs(t, crdFile("aquasecurity.github.io"))
	cluster.CreateNamespace(t, "shop")
	cfg := testConfig(t)
	cfg.Kinds = KindsConfig{VulnerabilityReports: true}
	tr := startReceiver(t, cfg, apiserver.AdminToken, "")

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
