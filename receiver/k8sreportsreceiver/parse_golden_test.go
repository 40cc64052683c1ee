// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden outputs of testdata/parsers from the parsers")

// goldenResult is one parsed result as its golden file records it: what the parser sets of the model, the
// key and ID derived from it, and the record body. The fields are listed rather than the model embedded, so
// that the files change when what a parser reads changes, not when the model grows.
type goldenResult struct {
	Key, ID                        string
	Source, Policy, Rule, Category string
	Severity                       policyresult.Severity
	Outcome                        policyresult.Outcome
	Scored                         *bool
	Message                        string
	Resource                       policyresult.Resource
	Report                         policyresult.Report
	Timestamp                      time.Time
	Vulnerability                  *policyresult.Vulnerability `json:",omitempty"`
	FailedChecks                   *int64                      `json:",omitempty"`
	Scan                           *policyresult.ScanRun       `json:",omitempty"`
	Body                           json.RawMessage
}

type goldenOutput struct {
	Results []goldenResult `json:",omitempty"`
	// Partial: results missing from this version are kept, not resolved.
	Partial bool   `json:",omitempty"`
	Error   string `json:",omitempty"`
}

// allKinds switches every kind on.
var allKinds = KindsConfig{PolicyReports: true, OpenReports: true, EphemeralReports: true, ComplianceCheckResults: true,
	ComplianceRemediations: true, ComplianceScans: true, VulnerabilityReports: true, ConfigAuditReports: true,
	ExposedSecretReports: true, RbacAssessmentReports: true, InfraAssessmentReports: true,
	ClusterComplianceReports: true, GatekeeperConstraints: true}

// parserOf finds the parser the receiver uses for an object of this apiVersion and kind, and the resource it
// is served as.
func parserOf(t *testing.T, apiVersion, kind string) (schema.GroupVersionResource, parse.Func) {
	t.Helper()
	gv, err := schema.ParseGroupVersion(apiVersion)
	require.NoError(t, err)
	gvr := gv.WithResource(strings.ToLower(kind) + "s")
	for _, k := range enabledKinds(allKinds) {
		if k.groupVersion == gv && k.wants(gvr.Resource) {
			return gvr, k.parse
		}
	}
	t.Fatalf("no parser for %s %s", apiVersion, kind)
	return gvr, nil
}

// TestParsersGolden parses every fixture in testdata/parsers and compares the results with the golden file
// next to it (NAME.golden.json); -update rewrites the golden files.
func TestParsersGolden(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "parsers", "*", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	for _, path := range fixtures {
		name := strings.TrimSuffix(strings.TrimPrefix(path, filepath.Join("testdata", "parsers")+string(filepath.Separator)), ".yaml")
		t.Run(name, func(t *testing.T) {
			y, err := os.ReadFile(path)
			require.NoError(t, err)
			raw, err := yaml.YAMLToJSON(y)
			require.NoError(t, err)
			var typ struct{ APIVersion, Kind string }
			require.NoError(t, json.Unmarshal(raw, &typ))
			gvr, parser := parserOf(t, typ.APIVersion, typ.Kind)
			obj, err := parse.DecodeObject(gvr, raw)
			require.NoError(t, err)

			var out goldenOutput
			results, err := parser(obj, testBudget)
			if err != nil {
				out.Error = err.Error()
			}
			out.Partial = obj.Partial
			assertDistinctKeys(t, results...)
			for i := range results {
				r := &results[i]
				g := goldenResult{Key: r.Key(), ID: r.ID(), Source: r.Source, Policy: r.Policy, Rule: r.Rule,
					Category: r.Category, Severity: r.Severity, Outcome: r.Outcome, Scored: r.Scored, Message: r.Message,
					Resource: r.Resource, Report: r.Report, Timestamp: r.Timestamp,
					Vulnerability: r.Vulnerability, FailedChecks: r.FailedChecks, Scan: r.Scan}
				if !r.Body.IsZero() {
					g.Body = r.Body.Bytes()
				}
				out.Results = append(out.Results, g)
			}
			got, err := json.MarshalIndent(out, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')

			golden := strings.TrimSuffix(path, ".yaml") + ".golden.json"
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, got, 0o600))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden file: run go test -run TestParsersGolden -update")
			assert.Equal(t, string(want), string(got), "%s differs from its golden file; if the change is intended, run -update and review the diff", path)
		})
	}
}
