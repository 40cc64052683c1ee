// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/dashboards"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
)

// scrapeOverlay, after prometheusOverlay, gives the result gauges the labels the compliance dashboard filters on
// and adds the default config's prometheus exporter (its settings as shipped, its port the test's) next to the
// remote write, so that one emission reaches Prometheus both ways.
const scrapeOverlay = `
connectors:
  policy_metrics:
    results:
      labels: [k8s.cluster.name, policy.source, policy.name, policy.resource.namespace, policy.severity]
service:
  pipelines:
    metrics:
      exporters: [file/metrics, prometheus, prometheus_remote_write]
`

// withoutTargetLabels is s's labels without those Prometheus adds to what it scrapes.
func withoutTargetLabels(s promtest.Sample) string {
	s.Labels = maps.Clone(s.Labels)
	delete(s.Labels, "job")
	delete(s.Labels, "instance")
	return s.String()
}

// sameValues is nil when prom answers every query of want with want's value.
func sameValues(prom *promtest.Server, queries []string, want *promtest.Server) error {
	expected := map[string]float64{}
	for _, q := range queries {
		v, err := want.Value(q)
		if err != nil {
			return err
		}
		expected[q] = v
	}
	return promValues(prom, expected)
}

// TestPolicyMetricsScraped: a real Prometheus scrapes the default config's prometheus exporter on the built
// collector while a second one receives the same emissions by remote write. Both hold the same series (the
// scraped ones with job and instance added) and values, and every panel query of the compliance and decisions
// dashboards, with the variables at All and at values that exist, answers from the scraped data as it does from
// the written data: the same series and, but for rates and increases (their samples fall at other times), the
// same values.
func TestPolicyMetricsScraped(t *testing.T) {
	written := promtest.Start(t, promtest.Options{})
	c, p := startOverlays(t, t.TempDir(), nil, prometheusOverlay(written.RemoteWriteURL(), collectortest.FreePort(t)), scrapeOverlay)
	defer c.Stop()
	scraped := promtest.Start(t, promtest.Options{
		Targets: []promtest.Target{{Job: "otelcol-policy", Address: fmt.Sprintf("127.0.0.1:%d", p.PolicyMetrics)}},
	})

	web := sampleResult("web-3")
	web.Outcome, web.Severity = policyresult.OutcomePass, policyresult.SeverityMedium
	web.Resource.Namespace, web.Report.Namespace = "web", "web"
	sendOTLP(t, p.HTTP, sampleResult("web-1"), sampleResult("web-2"), web)
	require.Equal(t, http.StatusOK, postOPA(t, p.OPA, "["+opaDecision("opa-1", false)+","+opaDecision("opa-2", true)+"]"))

	decisions := `sum(policy_decisions_total)`
	queries := []string{
		`sum(policy_results{policy_result="fail",policy_resource_namespace="shop"})`,
		`sum(policy_results{policy_result="pass",policy_resource_namespace="web"})`,
		decisions,
	}
	settled := func(want float64) {
		t.Helper()
		collectortest.Eventually(t, 60*time.Second, func() error {
			if err := promValues(written, map[string]float64{queries[0]: 2, queries[1]: 1, decisions: want}); err != nil {
				return fmt.Errorf("written: %w", err)
			}
			return sameValues(scraped, queries, written)
		})
	}
	settled(2)
	// More decisions after the first samples, so that the decisions dashboard's rates and increases are not 0.
	require.Equal(t, http.StatusOK, postOPA(t, p.OPA, "["+opaDecision("opa-3", false)+"]"))
	settled(3)

	// The same series: names and labels, but for the target's job and instance.
	for _, q := range []string{`{__name__=~"policy_.+"}`, `count by (__name__) ({__name__=~".+"})`} {
		var want, got []string
		for prom, out := range map[*promtest.Server]*[]string{written: &want, scraped: &got} {
			samples, err := prom.Query(q)
			require.NoError(t, err)
			for _, s := range samples {
				*out = append(*out, withoutTargetLabels(s))
			}
		}
		if q == `count by (__name__) ({__name__=~".+"})` {
			// Prometheus' own series of the scrape (up, scrape_*) are not the collector's.
			got = slices.DeleteFunc(got, func(s string) bool { return !strings.HasPrefix(s, "policy_") && !strings.HasPrefix(s, "target_info") })
		}
		assert.ElementsMatch(t, want, got, q)
	}

	all, err := dashboards.Load(filepath.Join(collectortest.RepoRoot(t), dashboards.Dir))
	require.NoError(t, err)
	compared := 0
	for _, d := range all {
		if d.File == "collector-health.json" {
			continue // the collector's own metrics, scraped the same way either way
		}
		found, err := d.Values(written, d.All())
		require.NoError(t, err)
		foundScraped, err := d.Values(scraped, d.All())
		require.NoError(t, err)
		assert.Equal(t, found, foundScraped, "%s: the variables' values", d.File)
		first := map[string]string{}
		for _, v := range d.Variables {
			require.NotEmpty(t, found[v.Name], "%s: variable %s has values", d.File, v.Name)
			first[v.Name] = found[v.Name][0]
		}
		for _, values := range []map[string]string{d.All(), first} {
			fromWrite, fromScrape := d.Run(written, values, "5m"), d.Run(scraped, values, "5m")
			for i, w := range fromWrite {
				s := fromScrape[i]
				require.True(t, w.Answered(), "remote write: %s", w)
				require.True(t, s.Answered(), "scrape: %s", s)
				timed := strings.Contains(w.Expr, "rate(") || strings.Contains(w.Expr, "increase(")
				assert.Equal(t, answerSeries(w.Samples, timed), answerSeries(s.Samples, timed), "%s %s: %s", d.File, w.Query, w.Expr)
				compared++
			}
		}
	}
	t.Logf("%d panel queries answer alike from scraped and written series", compared)
}

// answerSeries is what a panel shows of a query's samples: each series, with its value unless timed.
func answerSeries(samples []promtest.Sample, timed bool) []string {
	out := make([]string, 0, len(samples))
	for _, s := range samples {
		if timed {
			s.Value = 0
		}
		out = append(out, withoutTargetLabels(s))
	}
	slices.Sort(out)
	return out
}
