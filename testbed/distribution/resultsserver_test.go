// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

type fleetCounts struct {
	Cluster, Source, Policy              string
	Pass, Fail, Warn, Error, Skip, Total int
}

// TestBinaryForwardsToResultsServer runs bin/results-server with a token and the collector with the results_grpc
// exporter on a persistent queue, and reads the fleet view back over HTTP and with the fleet command.
func TestBinaryForwardsToResultsServer(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite://" + filepath.Join(dir, "results.db")
	server := startResultsServer(t, dir, db)
	c, p := start(t, dir, server.collectorOverlay(map[string]string{"environment": "test"}))
	defer c.Stop()
	pass := sampleResult("web-3")
	pass.Outcome = policyresult.OutcomePass
	sendOTLP(t, p.HTTP, sampleResult("web-1"), sampleResult("web-2"), pass)

	want := fleetCounts{Cluster: "laptop", Source: "kyverno", Policy: "disallow-privileged", Pass: 1, Fail: 2, Total: 3}
	var fleet struct{ Policies []fleetCounts }
	collectortest.Eventually(t, 30*time.Second, func() error {
		req, err := http.NewRequest(http.MethodGet, server.URL()+"/v1/fleet", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+resultsToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("fleet view: %s", resp.Status)
		}
		fleet.Policies = nil
		if err := json.NewDecoder(resp.Body).Decode(&fleet); err != nil {
			return err
		}
		if len(fleet.Policies) != 1 || fleet.Policies[0] != want {
			return fmt.Errorf("fleet view %+v, want %+v", fleet.Policies, want)
		}
		return nil
	})

	out, err := exec.Command(resultsServerBinary(t), "fleet", "--db", db, "--output", "json", "--policy", "disallow-privileged").Output()
	require.NoError(t, err)
	var cli struct {
		Failing []struct {
			Key, Cluster, Outcome string
			ExtraMetadata         map[string]string `json:"extra_metadata"`
		}
	}
	require.NoError(t, json.Unmarshal(out, &cli), string(out))
	require.Len(t, cli.Failing, 2, string(out))
	for _, f := range cli.Failing {
		assert.Equal(t, "laptop", f.Cluster)
		assert.Equal(t, "fail", f.Outcome)
		assert.Nil(t, f.ExtraMetadata, "a list leaves extra_metadata to the result's page")
	}
	req, err := http.NewRequest(http.MethodGet, server.URL()+"/results/"+cli.Failing[0].Key, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+resultsToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(page), `<tr><th scope="row">environment</th><td>test</td></tr>`, "the result's page shows it")
}
