// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
)

// The attack of issue 30 on the policy_metrics series that both shipped configs now serve on a scrape endpoint
// (the DaemonSet gained policy_metrics for it): decisions each under a policy of its own, so that every one
// would be a series. decisions::max_series (10,000) bounds them; the rest is counted in the overflow series.

const defaultDecisionMaxSeries = 10_000

// fastEmission has policy_metrics emit every second instead of every 30, so that the attack is seen at once.
const fastEmission = `
connectors:
  policy_metrics:
    interval: 1s
`

// policyUpload is an upload of n denied decisions, each under its own policy (OPA path) of about 200 bytes.
func policyUpload(first, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := first; i < first+n; i++ {
		if i > first {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"decision_id":"series-%d","path":"attack-%d/%s","input":{"user":"mallory"},"result":false,"timestamp":"2026-11-23T08:00:00Z"}`,
			i, i, strings.Repeat("p", 180))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// TestPolicyMetricsDecisionSeries: 20,000 (short) / 50,000 (full) decisions, each under a policy of its own,
// uploaded by a client with the token. The scrape endpoint serves at most decisions::max_series decision series
// plus the overflow series (otel_metric_overflow="true"), which counts the rest, so every attack decision is
// counted once; the peak stays under the bound.
func TestPolicyMetricsDecisionSeries(t *testing.T) {
	n := pick(20_000, 50_000)
	const perUpload = 1_000
	for _, c := range []struct {
		config string
		start  func(*testing.T) *Target
	}{
		{"default", func(t *testing.T) *Target { return StartDefault(t, fastEmission) }},
		{"daemonset", func(t *testing.T) *Target { return StartDaemonSet(t, fastEmission) }},
	} {
		t.Run(c.config, func(t *testing.T) {
			tg := c.start(t)
			url := fmt.Sprintf("http://127.0.0.1:%d/metrics", tg.Ports.PolicyMetrics)
			client := &http.Client{Timeout: 30 * time.Second}
			var series int
			var overflow float64
			tg.Attack("policy-metrics-decision-series", func() map[string]float64 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				for first := 0; first < n; first += perUpload {
					code, err := tg.PostOPA(ctx, gzipped(policyUpload(first, perUpload)), true)
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, code)
				}
				tg.WaitBounded(2*time.Minute, func() error {
					text, err := selfmetrics.Scrape(client, url)
					if err != nil {
						return err
					}
					series = strings.Count(text, "\npolicy_decisions_total{")
					overflow, _ = selfmetrics.Sum(text, "policy_decisions_total", `otel_metric_overflow="true"`)
					attack, _ := selfmetrics.Sum(text, "policy_decisions_total", `policy_name="attack-`)
					if attack+overflow != float64(n) {
						return fmt.Errorf("%v attack decisions in %d series and %v in the overflow series, want %d in all", attack, series, overflow, n)
					}
					return nil
				})
				return map[string]float64{"decision_series": float64(series), "overflow": overflow}
			})
			assert.LessOrEqual(t, series, defaultDecisionMaxSeries+1, "decision series on the scrape endpoint: the cap and the overflow series")
			assert.Greater(t, overflow, float64(n-defaultDecisionMaxSeries-1), "the decisions beyond the cap are counted in the overflow series")
		})
	}
}
