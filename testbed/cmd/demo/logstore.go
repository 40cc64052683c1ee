// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/vlogstest"
)

// The two destinations of issue 30 in the demo: the prometheus exporter's scrape endpoint and VictoriaLogs, which
// the collector's otlp_http/victorialogs exporter writes every record to (the log store recipe,
// distributions/otelcol-policy/examples/victorialogs.yaml).

// logsqlFailingPerNamespace is the recipe's query for the results that fail now (each result's latest record,
// failing and not resolved), counted per namespace.
const logsqlFailingPerNamespace = `{event_name="policy.result"} | last 1 by (_time) partition by (policy.result.key) ` +
	`| filter policy.result:=fail NOT policy.result.state:=resolved | stats by (policy.resource.namespace) count() failing`

func victoriaLogsURL(p ports) string { return "http://127.0.0.1:" + strconv.Itoa(p.VictoriaLogs) }
func policyMetricsURL(p ports) string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", p.PolicyMetrics)
}

// startVictoriaLogs starts VictoriaLogs with its data in ./data/demo/victorialogs.
func startVictoriaLogs(e env, p ports, b binaries) error {
	_, err := start(e, "victoria-logs", nil, b.victoriaLogs, vlogstest.Args(e.path("victorialogs"), "127.0.0.1:"+strconv.Itoa(p.VictoriaLogs))...)
	return err
}

// printLogStore shows the scrape endpoint's series and the LogsQL answer.
func printLogStore(st state) {
	p := st.Ports
	fmt.Println()
	fmt.Printf("---- scrape endpoint %s (the prometheus exporter) ----\n", policyMetricsURL(p))
	text, err := selfmetrics.Scrape(&http.Client{Timeout: 10 * time.Second}, policyMetricsURL(p))
	if err != nil {
		fmt.Println("!! scrape:", err)
	} else {
		series := map[string]int{}
		for line := range strings.Lines(text) {
			if name, _, ok := strings.Cut(line, "{"); ok && strings.HasPrefix(name, "policy_") {
				series[name]++
			}
		}
		fail, _ := selfmetrics.Sum(text, "policy_results", `policy_result="fail"`)
		fmt.Printf("%s; policy_results{policy_result=\"fail\"} sums to %v\n", byLine(series), fail)
	}

	fmt.Println()
	fmt.Printf("---- VictoriaLogs %s: LogsQL over the records' attributes (examples/victorialogs.yaml) ----\n", victoriaLogsURL(p))
	fmt.Println(logsqlFailingPerNamespace)
	entries, err := vlogstest.New(victoriaLogsURL(p)).Query(logsqlFailingPerNamespace, 1000)
	if err != nil {
		fmt.Println("!! logsql:", err)
		return
	}
	counts := map[string]int{}
	for _, e := range entries {
		n, _ := strconv.Atoi(e["failing"])
		ns := e["policy.resource.namespace"]
		if ns == "" {
			ns = "(cluster-scoped)"
		}
		counts[ns] = n
	}
	names := make([]string, 0, len(counts))
	for ns := range counts {
		names = append(names, ns)
	}
	sort.Strings(names)
	fmt.Printf("failing results now, per namespace: %s (%d in all)\n", byLine(counts, names...), sum(counts))
}
