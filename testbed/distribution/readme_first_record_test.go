// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// readmeCurl is the README's example request: the body of its curl command.
var readmeCurl = regexp.MustCompile(`(?s)curl -s 127\.0\.0\.1:4318/v1/logs -H 'Content-Type: application/json' -d '(.*?)'\n`)

// TestReadmeFirstRecord sends the README's example record, as a newcomer does after `make run`: a result with a
// policy and an outcome and no hashes. It is written, summarised and counted under the key of its identity,
// and the collector logs no warning but the one for the missing kubeconfig.
func TestReadmeFirstRecord(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	m := readmeCurl.FindSubmatch(readme)
	require.NotNil(t, m, "the README's curl example")
	body := string(m[1])

	dir := t.TempDir()
	c, p := start(t, dir, fastIntervals)
	defer c.Stop()
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/logs", p.HTTP), "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	got := waitResults(t, dir, 1)
	require.Len(t, got, 1)
	assert.Equal(t, policyresult.Result{Cluster: "laptop", Policy: "require-labels", Outcome: policyresult.OutcomeFail}, got[0])

	var summaries []policyresult.Summary
	collectortest.Eventually(t, 30*time.Second, func() error {
		if summaries = readSummaries(t, dir); len(summaries) == 0 {
			return fmt.Errorf("no summary in %s yet", resultsFile)
		}
		return nil
	})
	assert.Equal(t, policyresult.Counts{Fail: 1, Total: 1}, summaries[0].Counts)
	collectortest.Eventually(t, 30*time.Second, func() error {
		for k, v := range lastMetrics(t, dir) {
			if strings.HasPrefix(k, "policy.results") && strings.Contains(k, "policy.name:require-labels") &&
				strings.Contains(k, "policy.result:fail") && v == 1 {
				return nil
			}
		}
		return fmt.Errorf("no policy.results gauge of require-labels at 1 in %v", lastMetrics(t, dir))
	})

	for line := range strings.Lines(c.Output()) {
		if strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t") {
			assert.Contains(t, line, "kubernetes client configuration", "a warning besides the missing kubeconfig's")
		}
	}
}
