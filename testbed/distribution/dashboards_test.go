// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/dashboards"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
)

// rulesFile is the chart's alerting rules, a Prometheus rules file whose groups the chart puts under spec.groups
// of its PrometheusRule.
func rulesFile(t *testing.T) string {
	return filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "helm", "otelcol-policy", "files", "rules", "otelcol-policy.yaml")
}

// ruleGroups are the groups of the shipped rules file.
func ruleGroups(t *testing.T) []map[string]any {
	raw, err := os.ReadFile(rulesFile(t))
	require.NoError(t, err)
	var file struct{ Groups []map[string]any }
	require.NoError(t, yaml.Unmarshal(raw, &file))
	require.NotEmpty(t, file.Groups, "%s has groups:", rulesFile(t))
	return file.Groups
}

// rulesWithFor writes the shipped rules file to dir with every rule's `for` replaced by forDuration, so that a
// test need not wait minutes. The expressions are the shipped ones.
func rulesWithFor(t *testing.T, dir, forDuration string) string {
	groups := ruleGroups(t)
	for _, g := range groups {
		for _, r := range g["rules"].([]any) {
			r.(map[string]any)["for"] = forDuration
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": groups})
	require.NoError(t, err)
	path := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	return path
}

// TestAlertRulesCheck: promtool accepts the shipped rules file as it is.
func TestAlertRulesCheck(t *testing.T) {
	out, err := exec.Command(promtest.Promtool(t), "check", "rules", rulesFile(t)).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "SUCCESS: 6 rules found")
}

// dashboardOverlay adds, to prometheusOverlay, what makes every panel and alert have something to show:
// namespace, severity and category on the result gauges; a second results destination (otlp_http/archive, no
// retries) that the test can take away; a decisions destination that never answers (otlp_http/stuck, one
// consumer, a queue of 4) so that its queue fills and decision_logs refuses; and a low max_events_per_request.
func dashboardOverlay(archiveURL, stuckURL string) string {
	return fmt.Sprintf(`
receivers:
  decision_logs:
    opa:
      max_events_per_request: 5
connectors:
  policy_metrics:
    results:
      labels: [k8s.cluster.name, policy.source, policy.name, policy.resource.namespace, policy.severity, policy.category]
exporters:
  otlp_http/archive:
    endpoint: %s
    retry_on_failure:
      enabled: false
  otlp_http/stuck:
    endpoint: %s
    timeout: 10m
    retry_on_failure:
      enabled: false
    sending_queue:
      num_consumers: 1
      queue_size: 4
service:
  pipelines:
    logs/archive:
      receivers: [otlp]
      exporters: [otlp_http/archive]
    logs/stuck:
      receivers: [decision_logs]
      exporters: [otlp_http/stuck]
`, archiveURL, stuckURL)
}

// alertStates is alertname → state of the alerts Prometheus holds now.
func alertStates(prom *promtest.Server) (map[string]string, error) {
	alerts, err := prom.Alerts()
	if err != nil {
		return nil, err
	}
	states := map[string]string{}
	for _, a := range alerts {
		if states[a.Labels["alertname"]] != "firing" {
			states[a.Labels["alertname"]] = a.State
		}
	}
	return states, nil
}

// waitFiring polls the alerts until name fires, calling poke before each poll (to keep a fault going), and
// adds name to fired.
func waitFiring(t *testing.T, prom *promtest.Server, fired *[]string, name string, poke func()) {
	t.Helper()
	collectortest.Eventually(t, 90*time.Second, func() error {
		if poke != nil {
			poke()
		}
		states, err := alertStates(prom)
		if err != nil {
			return err
		}
		if states[name] != "firing" {
			return fmt.Errorf("%s is %q; alerts: %v", name, states[name], states)
		}
		return nil
	})
	*fired = append(*fired, name)
}

// postOPA posts an OPA decision-log upload and returns the status code.
func postOPA(t *testing.T, port int, body string) int {
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/logs", port), "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func opaDecision(id string, allowed bool) string {
	return fmt.Sprintf(`{"decision_id":%q,"path":"kubernetes/admission","input":{"user":"bob"},"result":%v,"timestamp":"2026-11-22T08:00:01Z"}`, id, allowed)
}

// TestDashboardsAndAlertsOnPrometheus: the real binary writes results and decisions to a real Prometheus, which
// scrapes its own metrics and evaluates the shipped rules (every `for` set to 0s: the expressions are the
// shipped ones). Each alert fires in the fault it is about, none before; then every panel query of every
// dashboard, with the variables at All and at values that exist, parses and returns data.
func TestDashboardsAndAlertsOnPrometheus(t *testing.T) {
	metricsPort := collectortest.FreePort(t)
	dir := t.TempDir()
	prom := promtest.Start(t, promtest.Options{
		Targets:   []promtest.Target{{Job: "otelcol-policy", Address: fmt.Sprintf("127.0.0.1:%d", metricsPort)}},
		RuleFiles: []string{rulesWithFor(t, dir, "0s")},
	})

	archive := httptest.NewServer(&collectortest.OTLPSink{})
	defer archive.Close()
	release := make(chan struct{})
	var released atomic.Bool
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-release
		http.Error(w, "released", http.StatusServiceUnavailable)
	}))
	releaseStuck := func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}
	defer stuck.Close()
	defer releaseStuck()

	// No kubeconfig: k8s_reports retries, counting reason="unavailable", as with an API server that is away.
	c, p := startOverlays(t, dir, nil, prometheusOverlay(prom.RemoteWriteURL(), metricsPort), dashboardOverlay(archive.URL, stuck.URL))
	defer c.Stop()

	pass := sampleResult("web-3")
	pass.Outcome, pass.Severity = policyresult.OutcomePass, policyresult.SeverityMedium
	pass.Resource.Namespace, pass.Report.Namespace = "web", "web"
	sendOTLP(t, p.HTTP, sampleResult("web-1"), sampleResult("web-2"), pass)
	require.Equal(t, http.StatusOK, postOPA(t, p.OPA, "["+opaDecision("opa-1", false)+","+opaDecision("opa-2", true)+"]"))

	var fired []string
	// The receiver fault is there from the start: once it fires, the rules run on scraped data, and the other
	// alerts, whose faults have not happened, must be silent.
	waitFiring(t, prom, &fired, "OtelcolPolicyReportReceiverFaulted", nil)
	states, err := alertStates(prom)
	require.NoError(t, err)
	for _, name := range []string{"OtelcolPolicyExportFailing", "OtelcolPolicyQueueFilling", "OtelcolPolicyRecordsRefused", "OtelcolPolicyDecisionsRejected", "OtelcolPolicyDown"} {
		assert.Empty(t, states[name], name+" before its fault")
	}

	// The results archive goes away: otlp_http/archive fails every send.
	archive.Close()
	n := 0
	waitFiring(t, prom, &fired, "OtelcolPolicyExportFailing", func() {
		n++
		sendOTLP(t, p.HTTP, sampleResult(fmt.Sprintf("api-%d", n)))
	})

	// The decisions destination never answers: its queue fills, then decision_logs refuses uploads (503).
	refused := false
	waitFiring(t, prom, &fired, "OtelcolPolicyQueueFilling", func() {
		n++
		refused = postOPA(t, p.OPA, "["+opaDecision(fmt.Sprintf("opa-q%d", n), n%2 == 0)+"]") == http.StatusServiceUnavailable || refused
	})
	waitFiring(t, prom, &fired, "OtelcolPolicyRecordsRefused", func() {
		n++
		refused = postOPA(t, p.OPA, "["+opaDecision(fmt.Sprintf("opa-r%d", n), false)+"]") == http.StatusServiceUnavailable || refused
	})
	assert.True(t, refused, "decision_logs answered 503 to some upload")

	// An upload over max_events_per_request: 413, those decisions are not recorded.
	events := make([]string, 6)
	for i := range events {
		events[i] = opaDecision(fmt.Sprintf("opa-big-%d", i), true)
	}
	big := "[" + strings.Join(events, ",") + "]"
	require.Equal(t, http.StatusRequestEntityTooLarge, postOPA(t, p.OPA, big))
	waitFiring(t, prom, &fired, "OtelcolPolicyDecisionsRejected", func() { postOPA(t, p.OPA, big) })

	// Every panel query, with the variables at All and at the first value each variable offers.
	all, err := dashboards.Load(filepath.Join(collectortest.RepoRoot(t), dashboards.Dir))
	require.NoError(t, err)
	require.Len(t, all, 3)
	queries := 0
	for _, d := range all {
		found, err := d.Values(prom, d.All())
		require.NoError(t, err)
		for _, v := range d.Variables {
			assert.NotEmpty(t, found[v.Name], "%s: variable %s has values", d.File, v.Name)
		}
		first := map[string]string{}
		for name, values := range found {
			first[name] = values[0]
		}
		for _, values := range []map[string]string{d.All(), first} {
			for _, a := range d.Run(prom, values, "5m") {
				assert.True(t, a.Answered(), a.String())
			}
		}
		queries += len(d.Queries)
	}
	t.Logf("%d panel queries answered", queries)

	// The collector stops: Prometheus cannot scrape it.
	releaseStuck()
	c.Stop()
	waitFiring(t, prom, &fired, "OtelcolPolicyDown", nil)

	// Every rule of the file fired in this scenario.
	var names []string
	for _, g := range ruleGroups(t) {
		for _, r := range g["rules"].([]any) {
			names = append(names, r.(map[string]any)["alert"].(string))
		}
	}
	assert.ElementsMatch(t, names, fired)
}
