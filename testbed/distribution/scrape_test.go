// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
)

// policyMetricsURL is the scrape endpoint of policy_metrics' series (the prometheus exporter) on p.
func policyMetricsURL(p ports) string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", p.PolicyMetrics)
}

// scrapePolicyMetrics is what the scrape endpoint on p serves now.
func scrapePolicyMetrics(t *testing.T, p ports) string {
	t.Helper()
	text, err := selfmetrics.Scrape(http.DefaultClient, policyMetricsURL(p))
	require.NoError(t, err)
	return text
}

// waitScrapedGauges waits until the policy_results gauges on the scrape endpoint on p read want ("pass=P
// fail=F", as sinkGauges writes them).
func waitScrapedGauges(t *testing.T, p ports, want string) {
	t.Helper()
	collectortest.Eventually(t, 30*time.Second, func() error {
		text, err := selfmetrics.Scrape(http.DefaultClient, policyMetricsURL(p))
		if err != nil {
			return err
		}
		pass, _ := selfmetrics.Sum(text, "policy_results", `policy_result="pass"`)
		fail, _ := selfmetrics.Sum(text, "policy_results", `policy_result="fail"`)
		if got := fmt.Sprintf("pass=%v fail=%v", pass, fail); got != want {
			return fmt.Errorf("%s: %s, want %s", policyMetricsURL(p), got, want)
		}
		return nil
	})
}
