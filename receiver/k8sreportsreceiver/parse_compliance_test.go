// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

var (
	gvrComplianceCheckResults = schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "compliancecheckresults"}
	gvrComplianceRemediations = schema.GroupVersionResource{Group: "compliance.openshift.io", Version: "v1alpha1", Resource: "complianceremediations"}
)

const complianceOperatorNS = "openshift-compliance"

func TestParseComplianceCheckResult(t *testing.T) {
	tests := []struct {
		file string
		want policyresult.Result
	}{
		{
			// The description's first non-empty line is the message; the annotation is the time.
			file: "compliance/ccr-fail.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "ocp4-cis-node-worker",
				Rule:     "xccdf_org.ssgproject.content_rule_kubelet_enable_protect_kernel_defaults",
				Severity: policyresult.SeverityMedium, Outcome: policyresult.OutcomeFail,
				Message: "Enable Protect Kernel Defaults",
				Report: policyresult.Report{Kind: "ComplianceCheckResult", Namespace: complianceOperatorNS,
					Name: "ocp4-cis-node-worker-kubelet-enable-protect-kernel-defaults"},
				Timestamp: time.Date(2025, 2, 20, 1, 30, 45, 0, time.UTC),
			},
		},
		{
			// No description: the instructions are the message. No annotation: no time.
			file: "compliance/ccr-manual.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "ocp4-cis",
				Rule:     "xccdf_org.ssgproject.content_rule_accounts_restrict_service_account_tokens",
				Severity: policyresult.SeverityMedium, Outcome: policyresult.OutcomeSkip,
				Message: "For each pod in the cluster, review the pod specification and\n" +
					"ensure that pods that do not need to explicitly communicate with\n" +
					"the API server have automountServiceAccountToken configured to false.",
				Report: policyresult.Report{Kind: "ComplianceCheckResult", Namespace: complianceOperatorNS,
					Name: "ocp4-cis-accounts-restrict-service-account-tokens"},
			},
		},
		{
			// Suite label only; severity "unknown" is none; an annotation that does not parse is no time.
			file: "compliance/ccr-not-applicable.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "e8-suite",
				Rule:    "xccdf_org.ssgproject.content_rule_grub2_audit_argument",
				Outcome: policyresult.OutcomeSkip,
				Message: "Enable Auditing for Processes Which Start Prior to the Audit Daemon",
				Report: policyresult.Report{Kind: "ComplianceCheckResult", Namespace: complianceOperatorNS,
					Name: "rhcos4-e8-worker-grub2-audit-argument"},
			},
		},
		{
			// No labels, no id, an unknown status: the object name is the rule and there is no outcome.
			file: "compliance/ccr-bare.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Rule: "custom-check",
				Report: policyresult.Report{Kind: "ComplianceCheckResult", Namespace: complianceOperatorNS,
					Name: "custom-check"},
			},
		},
	}

	var all []parse.Result
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := parse.ComplianceCheckResult(parserFixture(t, gvrComplianceCheckResults, tt.file), testBudget)
			require.NoError(t, err)
			require.Equal(t, []policyresult.Result{tt.want}, parsedResults(got))
			// Checks have no subject; the check result object identifies them.
			assert.True(t, got[0].Resource.IsZero())
			all = append(all, got...)
		})
	}
	assertDistinctKeys(t, all...)
}

func TestParseComplianceCheckResultBody(t *testing.T) {
	got, err := parse.ComplianceCheckResult(parserFixture(t, gvrComplianceCheckResults, "compliance/ccr-not-applicable.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 1)
	// The source's own fields, the original status and severity spelling among them, without metadata.
	assert.JSONEq(t, `{
		"apiVersion": "compliance.openshift.io/v1alpha1",
		"kind": "ComplianceCheckResult",
		"id": "xccdf_org.ssgproject.content_rule_grub2_audit_argument",
		"description": "Enable Auditing for Processes Which Start Prior to the Audit Daemon",
		"severity": "unknown",
		"status": "NOT-APPLICABLE",
		"warnings": ["The check is not applicable on this platform"]
	}`, string(got[0].Body.Bytes()))

	got, err = parse.ComplianceCheckResult(parserFixture(t, gvrComplianceCheckResults, "compliance/ccr-fail.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.NotContains(t, string(got[0].Body.Bytes()), "ownerReferences")
	assert.Contains(t, string(got[0].Body.Bytes()), `"valuesUsed":["var-kubelet-protect-kernel-defaults"]`)
	assert.Contains(t, string(got[0].Body.Bytes()), `"warnings":null`)
}

func TestParseComplianceRemediation(t *testing.T) {
	report := func(name string) policyresult.Report {
		return policyresult.Report{Kind: "ComplianceRemediation", Namespace: complianceOperatorNS, Name: name}
	}
	tests := []struct {
		file string
		want policyresult.Result
	}{
		{
			file: "compliance/remediation-applied.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "ocp4-cis", Rule: "ocp4-cis-api-server-encryption-provider-cipher",
				Outcome: policyresult.OutcomePass, Message: "Applied",
				Resource: policyresult.Resource{APIVersion: "config.openshift.io/v1", Kind: "APIServer", Name: "cluster"},
				Report:   report("ocp4-cis-api-server-encryption-provider-cipher"),
			},
		},
		{
			// The MachineConfig payload has no name: no subject.
			file: "compliance/remediation-machineconfig.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "rhcos4-e8-worker", Rule: "rhcos4-e8-worker-sysctl-kernel-kptr-restrict",
				Outcome: policyresult.OutcomeWarn, Message: "NotApplied",
				Report: report("rhcos4-e8-worker-sysctl-kernel-kptr-restrict"),
			},
		},
		{
			file: "compliance/remediation-error.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "ocp4-moderate", Rule: "ocp4-moderate-audit-profile-set",
				Outcome: policyresult.OutcomeError, Message: `configmaps "audit-profile" is forbidden: cannot update`,
				Resource: policyresult.Resource{APIVersion: "v1", Kind: "ConfigMap", Namespace: "openshift-config",
					Name: "audit-profile"},
				Report: report("ocp4-moderate-audit-profile-set"),
			},
		},
		{
			// No status yet, null payload: no outcome, no message, no subject.
			file: "compliance/remediation-no-status.yaml",
			want: policyresult.Result{
				Source: "compliance-operator", Policy: "ocp4-cis", Rule: "ocp4-cis-new",
				Report: report("ocp4-cis-new"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := parse.ComplianceRemediation(parserFixture(t, gvrComplianceRemediations, tt.file), testBudget)
			require.NoError(t, err)
			assert.Equal(t, []policyresult.Result{tt.want}, parsedResults(got))
		})
	}
}

func TestParseComplianceRemediationBody(t *testing.T) {
	got, err := parse.ComplianceRemediation(parserFixture(t, gvrComplianceRemediations, "compliance/remediation-error.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.JSONEq(t, `{
		"apiVersion": "compliance.openshift.io/v1alpha1",
		"kind": "ComplianceRemediation",
		"spec": {"apply": true, "current": {"object": {
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": {"name": "audit-profile", "namespace": "openshift-config"},
			"data": {"profile": "WriteRequestBodies"}
		}}},
		"status": {"applicationState": "Error", "errorMessage": "configmaps \"audit-profile\" is forbidden: cannot update"}
	}`, string(got[0].Body.Bytes()))
}

func TestParseComplianceMalformed(t *testing.T) {
	_, err := parse.ComplianceCheckResult(parserFixture(t, gvrComplianceCheckResults, "compliance/ccr-malformed.yaml"), testBudget)
	assert.ErrorContains(t, err, "status")

	_, err = parse.ComplianceRemediation(parserFixture(t, gvrComplianceRemediations, "compliance/remediation-malformed.yaml"), testBudget)
	assert.ErrorContains(t, err, "spec.current.object")
}
