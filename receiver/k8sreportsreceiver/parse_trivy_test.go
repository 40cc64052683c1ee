// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

var (
	gvrVulnerabilityReports   = schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: "vulnerabilityreports"}
	gvrConfigAuditReports     = schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: "configauditreports"}
	gvrClusterConfigAuditReps = schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: "clusterconfigauditreports"}
	gvrExposedSecretReports   = schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: "exposedsecretreports"}
)

// parserFixture reads one object from testdata/parsers and decodes it the way the receiver does.
func parserFixture(t *testing.T, gvr schema.GroupVersionResource, name string) *parse.Object {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("testdata", "parsers", name))
	require.NoError(t, err)
	raw, err := yaml.YAMLToJSON(y)
	require.NoError(t, err)
	obj, err := parse.DecodeObject(gvr, raw)
	require.NoError(t, err)
	return obj
}

func parsedResults(prs []parse.Result) []policyresult.Result {
	out := make([]policyresult.Result, len(prs))
	for i := range prs {
		out[i] = prs[i].Result
	}
	return out
}

func assertDistinctKeys(t *testing.T, prs ...parse.Result) {
	t.Helper()
	seen := make(map[string]int, len(prs))
	for i := range prs {
		k := prs[i].Key()
		if j, dup := seen[k]; dup {
			t.Errorf("results %d (%s %s) and %d (%s %s) share key %s",
				j, prs[j].Policy, prs[j].Rule, i, prs[i].Policy, prs[i].Rule, k)
		}
		seen[k] = i
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return ts.UTC()
}

func TestParseVulnerabilityReport(t *testing.T) {
	rs := policyresult.Resource{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-7c9f8d6b5",
		UID: "8a7b6c5d-2222-4e3f-8a9b-0c1d2e3f4a5b"}
	vuln := func(policy, rule string, sev policyresult.Severity, msg string, res policyresult.Resource,
		report string, ns string, ts time.Time) policyresult.Result {
		return policyresult.Result{
			Source: "trivy-operator", Policy: policy, Rule: rule, Category: "vulnerability", Severity: sev,
			Outcome: policyresult.OutcomeFail, Message: msg, Resource: res,
			Report:    policyresult.Report{Kind: "VulnerabilityReport", Namespace: ns, Name: report},
			Timestamp: ts,
		}
	}
	const dh = "openssl: excessive time spent checking DH keys"
	const jackson = "jackson-databind: deep wrapper array nesting"
	const snake = "snakeyaml: constructor deserialization"
	appReport := "replicaset-web-7c9f8d6b5-app"
	ts := mustTime(t, "2025-03-01T08:02:30Z")

	tests := []struct {
		file string
		want []policyresult.Result
	}{
		{
			file: "trivy/vulnerabilityreport.yaml",
			want: []policyresult.Result{
				vuln("CVE-2024-0001", "app/libssl3", policyresult.SeverityHigh, dh, rs, appReport, "shop", ts),
				vuln("CVE-2024-0001", "app/libcrypto3", policyresult.SeverityHigh, dh, rs, appReport, "shop", ts),
				// UNKNOWN severity maps to none; an empty title falls back to the ID.
				vuln("CVE-2023-9999", "app/zlib1g", policyresult.SeverityNone, "CVE-2023-9999", rs, appReport, "shop", ts),
				// One package twice at two versions: the version tells them apart.
				vuln("GHSA-aaaa-bbbb-cccc", "app/com.fasterxml.jackson.core:jackson-databind@2.13.0",
					policyresult.SeverityCritical, jackson, rs, appReport, "shop", ts),
				vuln("GHSA-aaaa-bbbb-cccc", "app/com.fasterxml.jackson.core:jackson-databind@2.12.1",
					policyresult.SeverityCritical, jackson, rs, appReport, "shop", ts),
				// ...at one version in two paths: the path does.
				vuln("GHSA-dddd-eeee-ffff", "app/org.yaml:snakeyaml@1.33:opt/app/lib/snakeyaml-1.33.jar",
					policyresult.SeverityLow, snake, rs, appReport, "shop", ts),
				vuln("GHSA-dddd-eeee-ffff", "app/org.yaml:snakeyaml@1.33:opt/tools/lib/snakeyaml-1.33.jar",
					policyresult.SeverityLow, snake, rs, appReport, "shop", ts),
			},
		},
		{
			file: "trivy/vulnerabilityreport-sidecar.yaml",
			want: []policyresult.Result{
				vuln("CVE-2024-0001", "proxy/libssl3", policyresult.SeverityHigh, dh, rs, "replicaset-web-7c9f8d6b5-proxy", "shop",
					mustTime(t, "2025-03-01T08:03:00.25Z")),
			},
		},
		{
			// starboard.* labels; no namespace label, so the report's namespace; a timestamp that does not parse.
			file: "trivy/vulnerabilityreport-legacy.yaml",
			want: []policyresult.Result{
				vuln("CVE-2022-1111", "worker/busybox", policyresult.SeverityMedium, "CVE-2022-1111",
					policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "jobs", Name: "batch-runner",
						UID: "0c0c0c0c-3333-4444-5555-666666666666"},
					"pod-batch-runner-worker", "jobs", time.Time{}),
			},
		},
		{
			// No labels: the controller ownerReference, not the first one; no container known.
			file: "trivy/vulnerabilityreport-owner-only.yaml",
			want: []policyresult.Result{
				vuln("CVE-2021-2222", "libpq5", policyresult.SeverityLow, "postgresql: something minor",
					policyresult.Resource{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "data", Name: "db",
						UID: "1d1d1d1d-aaaa-bbbb-cccc-dddddddddddd"},
					"statefulset-db-postgres", "data", time.Time{}),
			},
		},
		{
			file: "trivy/vulnerabilityreport-orphan.yaml",
			want: []policyresult.Result{
				vuln("CVE-2020-3333", "openssl", policyresult.SeverityNone, "CVE-2020-3333", policyresult.Resource{},
					"orphan", "default", time.Time{}),
			},
		},
		{file: "trivy/vulnerabilityreport-empty.yaml", want: []policyresult.Result{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := parse.VulnerabilityReport(parserFixture(t, gvrVulnerabilityReports, tt.file), testBudget)
			require.NoError(t, err)
			results := parsedResults(got)
			for i := range results {
				// The vulnerability fields are asserted by TestParseVulnerabilityReportFields and the golden files.
				require.NotNil(t, results[i].Vulnerability)
				assert.Equal(t, results[i].Policy, results[i].Vulnerability.ID)
				results[i].Vulnerability = nil
			}
			assert.Equal(t, tt.want, results)
			assertDistinctKeys(t, got...)
		})
	}
}

func TestParseVulnerabilityReportBodyIsTheEntry(t *testing.T) {
	got, err := parse.VulnerabilityReport(parserFixture(t, gvrVulnerabilityReports, "trivy/vulnerabilityreport.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 7)
	assert.JSONEq(t, `{
		"vulnerabilityID": "CVE-2024-0001", "resource": "libssl3", "installedVersion": "3.0.11-1",
		"fixedVersion": "3.0.13-1", "severity": "HIGH", "score": 7.5,
		"title": "openssl: excessive time spent checking DH keys",
		"primaryLink": "https://avd.aquasec.com/nvd/cve-2024-0001", "links": [], "target": ""
	}`, string(got[0].Body.Bytes()))
	// The original severity stays in the body when the model has none for it.
	var entry map[string]any
	require.NoError(t, json.Unmarshal(got[2].Body.Bytes(), &entry))
	assert.Equal(t, "UNKNOWN", entry["severity"])
}

func TestParseVulnerabilityReportFields(t *testing.T) {
	got, err := parse.VulnerabilityReport(parserFixture(t, gvrVulnerabilityReports, "trivy/vulnerabilityreport.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 7)
	score := 7.5
	assert.Equal(t, &policyresult.Vulnerability{ID: "CVE-2024-0001", Score: &score, ScoreVersion: "3",
		Reference: "https://avd.aquasec.com/nvd/cve-2024-0001", PackageName: "libssl3", PackageVersion: "3.0.11-1",
		PackageFixedVersion: "3.0.13-1"}, got[0].Vulnerability)
	// No score: no score version either.
	assert.Nil(t, got[2].Vulnerability.Score)
	assert.Empty(t, got[2].Vulnerability.ScoreVersion)
}

func TestParseVulnerabilityReportContainersDoNotCollide(t *testing.T) {
	app, err := parse.VulnerabilityReport(parserFixture(t, gvrVulnerabilityReports, "trivy/vulnerabilityreport.yaml"), testBudget)
	require.NoError(t, err)
	proxy, err := parse.VulnerabilityReport(parserFixture(t, gvrVulnerabilityReports, "trivy/vulnerabilityreport-sidecar.yaml"), testBudget)
	require.NoError(t, err)
	// Same CVE, package and workload in two containers.
	require.Equal(t, app[0].Policy, proxy[0].Policy)
	require.Equal(t, app[0].Resource, proxy[0].Resource)
	assertDistinctKeys(t, append(app, proxy...)...)
}

func TestParseVulnerabilityReportRuleDoesNotDependOnOrder(t *testing.T) {
	obj := parserFixture(t, gvrVulnerabilityReports, "trivy/vulnerabilityreport.yaml")
	want, err := parse.VulnerabilityReport(obj, testBudget)
	require.NoError(t, err)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(obj.Raw, &doc))
	report := doc["report"].(map[string]any)
	vulns := report["vulnerabilities"].([]any)
	for i, j := 0, len(vulns)-1; i < j; i, j = i+1, j-1 {
		vulns[i], vulns[j] = vulns[j], vulns[i]
	}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	reversed, err := parse.DecodeObject(gvrVulnerabilityReports, raw)
	require.NoError(t, err)
	got, err := parse.VulnerabilityReport(reversed, testBudget)
	require.NoError(t, err)

	keys := func(prs []parse.Result) []string {
		out := make([]string, len(prs))
		for i := range prs {
			out[i] = prs[i].Key()
		}
		return out
	}
	assert.ElementsMatch(t, keys(want), keys(got))
}

func TestParseConfigAuditReport(t *testing.T) {
	pod := policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "api-server"}
	report := policyresult.Report{Kind: "ConfigAuditReport", Namespace: "default", Name: "pod-api-server"}
	ts := mustTime(t, "2025-04-02T10:11:12Z")
	check := func(id, rule, category string, sev policyresult.Severity, o policyresult.Outcome, msg string) policyresult.Result {
		return policyresult.Result{
			Source: "trivy-operator", Policy: id, Rule: rule, Category: category, Severity: sev, Outcome: o,
			Message: msg, Resource: pod, Report: report, Timestamp: ts,
		}
	}
	const ksc = "Kubernetes Security Check"

	tests := []struct {
		file string
		gvr  schema.GroupVersionResource
		want []policyresult.Result
	}{
		{
			// uid: null in the ownerReference leaves the UID empty.
			file: "trivy/configauditreport.yaml",
			gvr:  gvrConfigAuditReports,
			want: []policyresult.Result{
				check("KSV001", "", ksc, policyresult.SeverityMedium, policyresult.OutcomeFail,
					"Container 'api' of Pod 'api-server' should set 'securityContext.allowPrivilegeEscalation' to false"),
				check("KSV011", "", ksc, policyresult.SeverityLow, policyresult.OutcomeFail,
					"Container 'api' of Pod 'api-server' should set 'resources.limits.cpu'; "+
						"Container 'metrics' of Pod 'api-server' should set 'resources.limits.cpu'"),
				check("KSV012", "", ksc, policyresult.SeverityMedium, policyresult.OutcomePass, "Runs as root user"),
				check("KSV104", "", ksc, policyresult.SeverityHigh, policyresult.OutcomeFail, "Seccomp policies disabled"),
				check("KSV014", "api", ksc, policyresult.SeverityHigh, policyresult.OutcomeFail,
					"Container 'api' should set 'securityContext.readOnlyRootFilesystem' to true"),
				check("KSV014", "metrics", ksc, policyresult.SeverityHigh, policyresult.OutcomeFail,
					"Container 'metrics' should set 'securityContext.readOnlyRootFilesystem' to true"),
				// No success flag: no outcome. UNKNOWN severity: none.
				check("KSV999", "", "Custom", policyresult.SeverityNone, "", "Custom check without a verdict"),
			},
		},
		{
			// The name is in the annotation; the empty namespace label makes the subject cluster-scoped.
			file: "trivy/clusterconfigauditreport-longname.yaml",
			gvr:  gvrClusterConfigAuditReps,
			want: []policyresult.Result{{
				Source: "trivy-operator", Policy: "KSV041", Category: ksc, Severity: policyresult.SeverityCritical,
				Outcome: policyresult.OutcomeFail,
				Message: "ClusterRole 'system:controller:example-node-controller' shouldn't have access to manage resource 'secrets'",
				Resource: policyresult.Resource{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole",
					Name: "system:controller:example-node-controller"},
				Report:    policyresult.Report{Kind: "ClusterConfigAuditReport", Name: "clusterrole-6c4d8b7f9"},
				Timestamp: ts,
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := parse.TrivyChecks(parserFixture(t, tt.gvr, tt.file), testBudget)
			require.NoError(t, err)
			assert.Equal(t, tt.want, parsedResults(got))
			assertDistinctKeys(t, got...)
		})
	}
}

func TestParseConfigAuditReportBodyIsTheCheck(t *testing.T) {
	got, err := parse.TrivyChecks(parserFixture(t, gvrConfigAuditReports, "trivy/configauditreport.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 7)
	assert.JSONEq(t, `{
		"checkID": "KSV014", "title": "Root file system is not read-only", "severity": "HIGH",
		"category": "Kubernetes Security Check", "scope": {"type": "Container", "value": "metrics"},
		"messages": ["Container 'metrics' should set 'securityContext.readOnlyRootFilesystem' to true"],
		"success": false
	}`, string(got[5].Body.Bytes()))
}

func TestParseTrivyMalformed(t *testing.T) {
	_, err := parse.VulnerabilityReport(parserFixture(t, gvrVulnerabilityReports, "trivy/vulnerabilityreport-malformed.yaml"), testBudget)
	assert.ErrorContains(t, err, "report.vulnerabilities")

	_, err = parse.TrivyChecks(parserFixture(t, gvrConfigAuditReports, "trivy/configauditreport-malformed.yaml"), testBudget)
	assert.ErrorContains(t, err, "report.checks")

	// One entry of the wrong type fails the report, naming the entry.
	obj, err := parse.DecodeObject(gvrVulnerabilityReports, []byte(`{"kind":"VulnerabilityReport","metadata":{"name":"x"},
		"report":{"vulnerabilities":[{"vulnerabilityID":"CVE-1","resource":"a"},{"vulnerabilityID":7}]}}`))
	require.NoError(t, err)
	_, err = parse.VulnerabilityReport(obj, testBudget)
	assert.ErrorContains(t, err, "report.vulnerabilities[1]")

	obj, err = parse.DecodeObject(gvrExposedSecretReports, []byte(`{"kind":"ExposedSecretReport","metadata":{"name":"x","namespace":"y"},
		"report":{"secrets":[{"ruleID":"aws-access-key-id","target":"a"},{"ruleID":["github-pat"]}]}}`))
	require.NoError(t, err)
	_, err = parse.ExposedSecretReport(obj, testBudget)
	assert.ErrorContains(t, err, "report.secrets[1]")
}

func TestParseTrivyMissingReport(t *testing.T) {
	// Objects without a report block (or with an explicit null) yield nothing and do not fail.
	for _, raw := range []string{
		`{"kind":"VulnerabilityReport","metadata":{"name":"x","namespace":"y"}}`,
		`{"kind":"VulnerabilityReport","metadata":{"name":"x","namespace":"y"},"report":null}`,
		`{"kind":"VulnerabilityReport","metadata":{"name":"x","namespace":"y"},"report":{"vulnerabilities":null}}`,
	} {
		obj, err := parse.DecodeObject(gvrVulnerabilityReports, []byte(raw))
		require.NoError(t, err)
		got, err := parse.VulnerabilityReport(obj, testBudget)
		require.NoError(t, err, raw)
		assert.Empty(t, got, raw)
		got, err = parse.TrivyChecks(obj, testBudget)
		require.NoError(t, err, raw)
		assert.Empty(t, got, raw)
		got, err = parse.ExposedSecretReport(obj, testBudget)
		require.NoError(t, err, raw)
		assert.Empty(t, got, raw)
		got, err = parse.ClusterComplianceReport(obj, testBudget)
		require.NoError(t, err, raw)
		assert.Empty(t, got, raw)
	}
}
