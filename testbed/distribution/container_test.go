// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// loadYAML reads a config file into plain maps and slices.
func loadYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	return cfg
}

// listeners are the host:port endpoints a config serves: every `endpoint` of an extension, a receiver or a
// prometheus exporter that is one (a Unix socket's path is not) and the self-metrics reader's host and port.
func listeners(t *testing.T, cfg map[string]any) []string {
	t.Helper()
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "endpoint" {
					if _, _, err := net.SplitHostPort(s); err == nil {
						out = append(out, s)
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(cfg["extensions"])
	walk(cfg["receivers"])
	for id, e := range cfg["exporters"].(map[string]any) {
		if id == "prometheus" || strings.HasPrefix(id, "prometheus/") {
			walk(e)
		}
	}
	readers, _ := cfg["service"].(map[string]any)["telemetry"].(map[string]any)["metrics"].(map[string]any)["readers"].([]any)
	for _, r := range readers {
		prom, ok := r.(map[string]any)["pull"].(map[string]any)["exporter"].(map[string]any)["prometheus"].(map[string]any)
		require.True(t, ok, "a pull reader with a prometheus exporter: %v", r)
		out = append(out, net.JoinHostPort(prom["host"].(string), strconv.Itoa(int(prom["port"].(float64)))))
	}
	sort.Strings(out)
	return out
}

// containerToken is the environment variable whose bearer token the container config's data endpoints require.
const containerToken = "OTELCOL_POLICY_TOKEN"

// TestContainerConfig: the image runs config.container.yaml, which is the default config's pipeline listening
// on all interfaces, its data endpoints (OTLP, OPA) behind the bearer token of $OTELCOL_POLICY_TOKEN, and
// EXPOSEs exactly the ports it serves; the binary validates it with the token, and refuses it without.
func TestContainerConfig(t *testing.T) {
	dir := filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy")
	final := parseDockerfile(t, filepath.Join(dir, "Dockerfile"))[1]
	assert.Contains(t, final.all("COPY"), "distributions/otelcol-policy/config.container.yaml "+configDir+"/config.yaml")
	assert.Equal(t, []string{`["--config=` + configDir + `/config.yaml"]`}, final.all("CMD"))

	container := loadYAML(t, filepath.Join(dir, "config.container.yaml"))
	var ports []string
	for _, l := range listeners(t, container) {
		host, port, err := net.SplitHostPort(l)
		require.NoError(t, err)
		assert.Equal(t, "0.0.0.0", host, "%s: the container config listens on all interfaces", l)
		ports = append(ports, port)
	}
	require.Len(t, ports, 6, "OTLP gRPC and HTTP, OPA uploads, health_check, self-metrics, policy_metrics' series")
	assert.ElementsMatch(t, ports, strings.Fields(strings.Join(final.all("EXPOSE"), " ")), "EXPOSE is what the container config serves")

	// The same pipeline as the default config: its listeners moved from loopback, the data endpoints behind the
	// token, nothing else changed.
	raw, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	require.NoError(t, err)
	var local map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(strings.ReplaceAll(string(raw), "127.0.0.1", "0.0.0.0")), &local))
	local["extensions"].(map[string]any)["bearertokenauth"] = map[string]any{"token": "${env:" + containerToken + "}"}
	service := local["service"].(map[string]any)
	service["extensions"] = append(service["extensions"].([]any), "bearertokenauth")
	receivers := local["receivers"].(map[string]any)
	otlp := receivers["otlp"].(map[string]any)["protocols"].(map[string]any)
	for _, endpoint := range []any{receivers["decision_logs"].(map[string]any)["opa"], otlp["grpc"], otlp["http"]} {
		endpoint.(map[string]any)["auth"] = map[string]any{"authenticator": "bearertokenauth"}
	}
	assert.Equal(t, local, container, "config.container.yaml is config.yaml on 0.0.0.0, OTLP and OPA behind the token")
	for _, l := range listeners(t, loadYAML(t, filepath.Join(dir, "config.yaml"))) {
		assert.True(t, strings.HasPrefix(l, "127.0.0.1:"), "%s: the default config listens on loopback only", l)
	}

	validate := exec.Command(collectortest.Binary(t), "validate", "--config="+filepath.Join(dir, "config.container.yaml"))
	validate.Env = append(os.Environ(), containerToken+"=a-token-of-the-operators-choice")
	out, err := validate.CombinedOutput()
	require.NoError(t, err, string(out))
	validate = exec.Command(collectortest.Binary(t), "validate", "--config="+filepath.Join(dir, "config.container.yaml"))
	validate.Env = withoutEnv(os.Environ(), containerToken)
	out, err = validate.CombinedOutput()
	require.Error(t, err, "without the token the container does not start")
	assert.Contains(t, string(out), "no bearer token provided")
}

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

// TestContainerConfigRequiresTheToken runs the container config (its listeners moved to free loopback ports):
// OTLP/HTTP, OTLP/gRPC and OPA uploads without the token, or with another, are refused and write nothing;
// with it they are written.
func TestContainerConfigRequiresTheToken(t *testing.T) {
	dir := t.TempDir()
	overlay, p := collectortest.DefaultConfigOverlay(t, dir)
	const token = "container-test-token-0123456789"
	c := collectortest.StartEnv(t, dir, []string{containerToken + "=" + token, "KUBECONFIG=" + filepath.Join(dir, "none")},
		filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "config.container.yaml"), overlay)
	c.WaitHealthy(collectortest.HealthURL(p.Health))

	post := func(url, contentType, body, bearer string) int {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentType)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	opa := fmt.Sprintf("http://127.0.0.1:%d/logs", p.OPA)
	otlpHTTP := fmt.Sprintf("http://127.0.0.1:%d/v1/logs", p.HTTP)
	decision := func(id string) string {
		return fmt.Sprintf(`[{"decision_id":%q,"path":"k8s/admission","result":true,"timestamp":"2026-11-28T08:00:00Z"}]`, id)
	}
	logs := func(body string) string {
		return `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"` + body + `"}}]}]}]}`
	}
	for _, bad := range []string{"", "wrong-token"} {
		assert.Equal(t, http.StatusUnauthorized, post(opa, "application/json", decision("forged-"+bad), bad), "OPA, token %q", bad)
		assert.Equal(t, http.StatusUnauthorized, post(otlpHTTP, "application/json", logs("forged-"+bad), bad), "OTLP/HTTP, token %q", bad)
	}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", p.GRPC), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = plogotlp.NewGRPCClient(conn).Export(context.Background(), plogotlp.NewExportRequest())
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "OTLP/gRPC without the token")

	assert.Equal(t, http.StatusOK, post(opa, "application/json", decision("real-decision"), token))
	assert.Equal(t, http.StatusOK, post(otlpHTTP, "application/json", logs("real-log"), token))
	results := filepath.Join(dir, "data", "results", "policy-results.jsonl")
	collectortest.Eventually(t, 30*time.Second, func() error {
		b, err := os.ReadFile(results)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "real-decision") || !strings.Contains(string(b), "real-log") {
			return errors.New("the records sent with the token are not written yet")
		}
		return nil
	})
	b, err := os.ReadFile(results)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "forged", "nothing sent without the token is written")
}
