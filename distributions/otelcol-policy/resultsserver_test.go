// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// resultsServerBinary is bin/results-server, built by `make build` next to the collector.
func resultsServerBinary(t *testing.T) string {
	bin := filepath.Join(filepath.Dir(collectortest.Binary(t)), "results-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (run make build)", bin, err)
	}
	return bin
}

type fleetCounts struct {
	Cluster, Source, Policy              string
	Pass, Fail, Warn, Error, Skip, Total int
}

// TestBinaryForwardsToResultsServer runs bin/results-server with a token and the collector with the results_grpc
// exporter on a persistent queue, and reads the fleet view back over HTTP and with the fleet command.
func TestBinaryForwardsToResultsServer(t *testing.T) {
	dir := t.TempDir()
	bin := resultsServerBinary(t)
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("# laptop collector\ns3cret-token\n"), 0o600))
	grpcPort, httpPort := collectortest.FreePort(t), collectortest.FreePort(t)
	db := "sqlite://" + filepath.Join(dir, "results.db")
	server := exec.Command(bin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", grpcPort),
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort), "--db", db, "--token-file", tokens)
	server.Stderr = os.Stderr
	require.NoError(t, server.Start())
	defer func() {
		_ = server.Process.Signal(os.Interrupt)
		_ = server.Wait()
	}()

	extra := fmt.Sprintf(`
exporters:
  results_grpc:
    endpoint: 127.0.0.1:%d
    tls:
      insecure: true
    headers:
      authorization: Bearer s3cret-token
    extra_metadata:
      environment: test
    sending_queue:
      storage: file_storage
service:
  pipelines:
    logs:
      exporters: [durable_file, results_grpc, policy_metrics]
`, grpcPort)
	c, p := start(t, dir, extra)
	defer c.Stop()
	pass := sampleResult("web-3")
	pass.Outcome = policyresult.OutcomePass
	sendOTLP(t, p.HTTP, sampleResult("web-1"), sampleResult("web-2"), pass)

	want := fleetCounts{Cluster: "laptop", Source: "kyverno", Policy: "disallow-privileged", Pass: 1, Fail: 2, Total: 3}
	var fleet struct{ Policies []fleetCounts }
	collectortest.Eventually(t, 30*time.Second, func() error {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/v1/fleet", httpPort), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer s3cret-token")
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

	out, err := exec.Command(bin, "fleet", "--db", db, "--output", "json", "--policy", "disallow-privileged").Output()
	require.NoError(t, err)
	var cli struct {
		Failing []struct {
			Cluster       string
			Outcome       string
			ExtraMetadata map[string]string `json:"extra_metadata"`
		}
	}
	require.NoError(t, json.Unmarshal(out, &cli), string(out))
	require.Len(t, cli.Failing, 2, string(out))
	for _, f := range cli.Failing {
		assert.Equal(t, "laptop", f.Cluster)
		assert.Equal(t, "fail", f.Outcome)
		assert.Equal(t, map[string]string{"environment": "test"}, f.ExtraMetadata)
	}
}
