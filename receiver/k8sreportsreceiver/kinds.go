// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// reportKind is a family of report resources in one group/version, read by one parser.
type reportKind struct {
	name         string // as in KindsConfig, for logs and metrics
	groupVersion schema.GroupVersion
	// resources are the plural resource names; empty means every resource the group/version serves
	// (Gatekeeper creates one constraint kind per ConstraintTemplate).
	resources []string
	parse     parse.Func
}

func (k reportKind) wants(resource string) bool {
	if len(k.resources) == 0 {
		return true
	}
	for _, r := range k.resources {
		if r == resource {
			return true
		}
	}
	return false
}

// enabledKinds lists the report kinds the configuration switches on.
func enabledKinds(c KindsConfig) []reportKind {
	var out []reportKind
	add := func(on bool, k reportKind) {
		if on {
			out = append(out, k)
		}
	}
	add(c.PolicyReports, reportKind{"policy_reports", schema.GroupVersion{Group: "wgpolicyk8s.io", Version: "v1alpha2"},
		[]string{"policyreports", "clusterpolicyreports"}, parse.PolicyReport})
	add(c.OpenReports, reportKind{"open_reports", schema.GroupVersion{Group: "openreports.io", Version: "v1alpha1"},
		[]string{"reports", "clusterreports"}, parse.PolicyReport})
	add(c.EphemeralReports, reportKind{"ephemeral_reports", schema.GroupVersion{Group: "reports.kyverno.io", Version: "v1"},
		[]string{"ephemeralreports", "clusterephemeralreports"}, parse.PolicyReport})
	add(c.ComplianceCheckResults, reportKind{"compliance_check_results", schema.GroupVersion{Group: "compliance.openshift.io", Version: "v1alpha1"},
		[]string{"compliancecheckresults"}, parse.ComplianceCheckResult})
	add(c.ComplianceRemediations, reportKind{"compliance_remediations", schema.GroupVersion{Group: "compliance.openshift.io", Version: "v1alpha1"},
		[]string{"complianceremediations"}, parse.ComplianceRemediation})
	add(c.ComplianceScans, reportKind{"compliance_scans", schema.GroupVersion{Group: "compliance.openshift.io", Version: "v1alpha1"},
		[]string{"compliancescans", "compliancesuites"}, parse.ComplianceScan})
	// trivy-operator. SbomReport and ClusterSbomReport are left out: they are inventories (a CycloneDX BOM),
	// with no finding, outcome or severity.
	add(c.VulnerabilityReports, reportKind{"vulnerability_reports", schema.GroupVersion{Group: "aquasecurity.github.io", Version: "v1alpha1"},
		[]string{"vulnerabilityreports", "clustervulnerabilityreports"}, parse.VulnerabilityReport})
	add(c.ConfigAuditReports, reportKind{"config_audit_reports", schema.GroupVersion{Group: "aquasecurity.github.io", Version: "v1alpha1"},
		[]string{"configauditreports", "clusterconfigauditreports"}, parse.TrivyChecks})
	add(c.ExposedSecretReports, reportKind{"exposed_secret_reports", schema.GroupVersion{Group: "aquasecurity.github.io", Version: "v1alpha1"},
		[]string{"exposedsecretreports"}, parse.ExposedSecretReport})
	add(c.RbacAssessmentReports, reportKind{"rbac_assessment_reports", schema.GroupVersion{Group: "aquasecurity.github.io", Version: "v1alpha1"},
		[]string{"rbacassessmentreports", "clusterrbacassessmentreports"}, parse.TrivyChecks})
	add(c.InfraAssessmentReports, reportKind{"infra_assessment_reports", schema.GroupVersion{Group: "aquasecurity.github.io", Version: "v1alpha1"},
		[]string{"infraassessmentreports", "clusterinfraassessmentreports"}, parse.TrivyChecks})
	add(c.ClusterComplianceReports, reportKind{"cluster_compliance_reports", schema.GroupVersion{Group: "aquasecurity.github.io", Version: "v1alpha1"},
		[]string{"clustercompliancereports"}, parse.ClusterComplianceReport})
	add(c.GatekeeperConstraints, reportKind{"gatekeeper_constraints", schema.GroupVersion{Group: "constraints.gatekeeper.sh", Version: "v1beta1"},
		nil, parse.GatekeeperConstraint})
	return out
}
