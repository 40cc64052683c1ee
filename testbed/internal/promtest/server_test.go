// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package promtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// TestServerScrapesAndQueries: Prometheus scrapes the target it is given, and Query returns the scraped series
// with its labels; a PromQL error is an error.
func TestServerScrapesAndQueries(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "# TYPE demo_items gauge\ndemo_items{kind=\"a\"} 7\n")
	}))
	defer target.Close()
	s := Start(t, Options{Targets: []Target{{Job: "demo", Address: strings.TrimPrefix(target.URL, "http://")}}})

	var got []Sample
	collectortest.Eventually(t, 30*time.Second, func() error {
		var err error
		if got, err = s.Query(`demo_items`); err == nil && len(got) == 0 {
			err = fmt.Errorf("not scraped yet")
		}
		return err
	})
	require.Len(t, got, 1)
	assert.Equal(t, `demo_items{instance="`+strings.TrimPrefix(target.URL, "http://")+`",job="demo",kind="a"} 7`, got[0].String())

	v, err := s.Value(`sum(demo_items) * 2`)
	require.NoError(t, err)
	assert.Equal(t, 14.0, v)
	_, err = s.Query(`sum(`)
	assert.ErrorContains(t, err, "bad_data")
}

func TestConfig(t *testing.T) {
	assert.Equal(t, `global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - "/tmp/rules.yaml"
scrape_configs:
  - job_name: "otelcol"
    static_configs:
      - targets: ["127.0.0.1:8888"]
`, Config(Options{Targets: []Target{{Job: "otelcol", Address: "127.0.0.1:8888"}}, RuleFiles: []string{"/tmp/rules.yaml"}, Interval: 2 * time.Second}))
}
