// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/vlogstest"
)

// The LogsQL queries of examples/victorialogs.yaml: the failing results of namespace shop (each result's latest
// record, when it fails and is not resolved), the resolved results, the failing results per namespace.
const (
	logsqlFailing = `{event_name="policy.result"} policy.resource.namespace:=shop
| last 1 by (_time) partition by (policy.result.key)
| filter policy.result:=fail NOT policy.result.state:=resolved
| fields _time, k8s.cluster.name, policy.source, policy.name, policy.rule, policy.resource.kind, policy.resource.name, policy.result.key`
	logsqlResolved            = `{event_name="policy.result"} policy.result.state:=resolved`
	logsqlFailingPerNamespace = `| stats by (policy.resource.namespace) count() failing`
)

// recipeComments is the text of the comment lines of an example, whitespace collapsed: what a reader copies.
func recipeComments(t *testing.T, name string) string {
	raw, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "examples", name))
	require.NoError(t, err)
	var words []string
	for line := range strings.Lines(string(raw)) {
		if text, ok := strings.CutPrefix(strings.TrimSpace(line), "#"); ok {
			words = append(words, strings.Fields(text)...)
		}
	}
	return strings.Join(words, " ")
}

// shown is what a LogsQL answer shows of a result: its identity and outcome, as the query's fields name them.
func shown(r policyresult.Result) string {
	return fmt.Sprintf("%s %s/%s %s %s/%s %s key=%s", r.Cluster, r.Source, r.Policy, r.Rule, r.Resource.Kind, r.Resource.Name, r.Outcome, r.Key())
}

// shownEntry is shown for an entry VictoriaLogs returned.
func shownEntry(e map[string]string, outcome string) string {
	return fmt.Sprintf("%s %s/%s %s %s/%s %s key=%s", e["k8s.cluster.name"], e["policy.source"], e["policy.name"], e["policy.rule"],
		e["policy.resource.kind"], e["policy.resource.name"], outcome, e["policy.result.key"])
}

// TestVictoriaLogsRecipe runs examples/victorialogs.yaml (OTLP in instead of its receivers) against a real
// VictoriaLogs: a change stream of results in two namespaces goes in through the otlp_http exporter, and the
// recipe's LogsQL queries over the records' attributes find exactly the results of namespace shop that fail now
// (not the one fixed since, nor the resolved one, nor namespace web's), the resolved result with its key and last
// outcome, and the failing count per namespace.
func TestVictoriaLogsRecipe(t *testing.T) {
	vl := vlogstest.Start(t)
	dir := t.TempDir()
	health, otlpPort := collectortest.FreePort(t), collectortest.FreePort(t)
	overlay := filepath.Join(dir, "overlay.yaml")
	require.NoError(t, os.WriteFile(overlay, []byte(fmt.Sprintf(`
extensions:
  file_storage:
    directory: %s
  health_check:
    endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
service:
  extensions: [file_storage, health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
`, filepath.Join(dir, "queue"), health, otlpPort)), 0o600))
	recipe := filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "examples", "victorialogs.yaml")
	c := collectortest.StartEnv(t, dir, append(slices.Clone(exampleEnv), "VICTORIALOGS_URL="+vl.URL), recipe, overlay)
	defer c.Stop()
	c.WaitHealthy(fmt.Sprintf("http://127.0.0.1:%d/", health))

	// First the reports as they were, then what changed: web-2 fixed, web-4 new, web-5 gone from its report.
	t0, t1 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	result := func(namespace, name string, outcome policyresult.Outcome, state policyresult.State, at time.Time) policyresult.Result {
		r := sampleResult(name)
		r.Resource.Namespace, r.Report.Namespace = namespace, namespace
		r.Outcome, r.State, r.Timestamp = outcome, state, at
		return r
	}
	fail, pass := policyresult.OutcomeFail, policyresult.OutcomePass
	web1 := result("shop", "web-1", fail, policyresult.StateNew, t0)
	web4 := result("shop", "web-4", fail, policyresult.StateNew, t1)
	web5 := result("shop", "web-5", fail, policyresult.StateNew, t0)
	gone := web5
	gone.State, gone.Timestamp, gone.Message = policyresult.StateResolved, t1, ""
	api1 := result("web", "api-1", fail, policyresult.StateNew, t0)
	sendOTLP(t, otlpPort, web1, result("shop", "web-2", fail, policyresult.StateNew, t0), result("shop", "web-3", pass, policyresult.StateNew, t0), web5, api1)
	sendOTLP(t, otlpPort, result("shop", "web-2", pass, policyresult.StateChanged, t1), web4, gone)

	// Every record is there (8), then the queries.
	collectortest.Eventually(t, 30*time.Second, func() error {
		all, err := vl.Query(`{event_name="policy.result"}`, 100)
		if err != nil {
			return err
		}
		if len(all) != 8 {
			return fmt.Errorf("%d records in VictoriaLogs, want 8", len(all))
		}
		return nil
	})

	entries, err := vl.Query(logsqlFailing, 100)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, shownEntry(e, "fail"))
	}
	assert.ElementsMatch(t, []string{shown(web1), shown(web4)}, got, "the failing results of namespace shop")
	for _, e := range entries {
		assert.NotEmpty(t, e["_time"])
		assert.NotContains(t, e, "policy.message", "the query's fields only")
	}

	entries, err = vl.Query(logsqlResolved, 100)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one resolved result")
	assert.Equal(t, shown(gone), shownEntry(entries[0], entries[0]["policy.result"]), "its identity, key and last outcome")
	assert.Equal(t, "shop", entries[0]["policy.resource.namespace"])
	assert.Equal(t, t1.Format(time.RFC3339), entries[0]["_time"], "the record's time")

	perNamespace := strings.Replace(logsqlFailing, ` policy.resource.namespace:=shop`, "", 1)
	perNamespace = perNamespace[:strings.LastIndex(perNamespace, "\n| fields")] + "\n" + logsqlFailingPerNamespace
	entries, err = vl.Query(perNamespace, 100)
	require.NoError(t, err)
	counts := map[string]string{}
	for _, e := range entries {
		counts[e["policy.resource.namespace"]] = e["failing"]
	}
	assert.Equal(t, map[string]string{"shop": "2", "web": "1"}, counts, "failing results per namespace")

	// What the recipe tells its reader to run.
	comments := recipeComments(t, "victorialogs.yaml")
	for _, q := range []string{logsqlFailing, logsqlResolved, logsqlFailingPerNamespace} {
		assert.Contains(t, comments, strings.Join(strings.Fields(q), " "), "examples/victorialogs.yaml shows the query the test runs")
	}
}
