// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// exampleEnv sets every variable the example configs reference.
var exampleEnv = []string{
	"OTELCOL_POLICY_CLUSTER_NAME=prod-eu-1", "KAFKA_BROKERS=kafka:9092", "S3_BUCKET=policy-results",
	"AWS_REGION=eu-west-1", "OTLP_ENDPOINT=https://otlp.example.com", "OTLP_TOKEN=token",
	"RESULTS_SERVER=results.example.com:443", "ENVIRONMENT=prod",
	// The log store recipes'.
	"VICTORIALOGS_URL=http://victorialogs:9428", "LOKI_URL=http://loki-gateway.loki", "LOKI_TENANT=policy",
	"ELASTIC_OTLP_ENDPOINT=https://policy.ingest.eu-west-1.aws.elastic.cloud:443", "ELASTIC_API_KEY=key",
	"DATA_PREPPER_ENDPOINT=data-prepper.opensearch:21892", "SPLUNK_GATEWAY=splunk-otel-collector.splunk:4317",
	"DD_AGENT_HOST=10.0.0.1",
	// The downward API's, which k8s_events reads.
	"K8S_POD_NAME=otelcol-policy-7d9f8-abcde", "K8S_POD_NAMESPACE=otelcol-policy", "K8S_POD_UID=0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01",
}

func examples(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "examples", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 12, "the recipes the README lists")
	return files
}

// TestExamplesLoad validates every example with the distribution binary: components, settings and OTTL
// statements.
func TestExamplesLoad(t *testing.T) {
	for _, f := range examples(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cmd := exec.Command(collectortest.Binary(t), "validate", "--config="+f)
			cmd.Env = append(os.Environ(), exampleEnv...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
		})
	}
}

// TestRedactExampleRedacts runs the redaction recipe, writing to a file instead of its OTLP backend, and checks
// what leaves the collector.
func TestRedactExampleRedacts(t *testing.T) {
	dir := t.TempDir()
	opa, health := collectortest.FreePort(t), collectortest.FreePort(t)
	overlay := filepath.Join(dir, "overlay.yaml")
	require.NoError(t, os.WriteFile(overlay, []byte(fmt.Sprintf(`
extensions:
  health_check:
    endpoint: 127.0.0.1:%d
receivers:
  decision_logs:
    opa:
      endpoint: 127.0.0.1:%d
exporters:
  durable_file:
    path: ./%s
service:
  extensions: [health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      exporters: [durable_file]
`, health, opa, resultsFile)), 0o600))
	example := filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "examples", "redact-admission-input.yaml")
	c := collectortest.StartEnv(t, dir, exampleEnv, example, overlay)
	defer c.Stop()
	c.WaitHealthy(fmt.Sprintf("http://127.0.0.1:%d/", health))

	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"req-1","operation":"CREATE",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"shop","userInfo":{"username":"alice@example.com"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"web","image":"nginx","env":[{"name":"PASSWORD","value":"hunter2"}]}]}}}}`
	body := `[{"decision_id":"opa-1","path":"kubernetes/admission","input":` + review + `,"result":false,"timestamp":"2026-11-22T08:00:01Z"}]`
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/logs", opa), "application/json", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var got plog.LogRecord
	collectortest.Eventually(t, 30*time.Second, func() error {
		eachRecord(t, dir, func(_ pcommon.Resource, lr plog.LogRecord) {
			if lr.EventName() == policyresult.EventDecision {
				got = lr
			}
		})
		if got == (plog.LogRecord{}) {
			return fmt.Errorf("no decision in %s yet", resultsFile)
		}
		return nil
	})
	request := got.Body().Map().AsRaw()["input"].(map[string]any)["request"].(map[string]any)
	assert.Equal(t, map[string]any{
		"uid": "req-1", "operation": "CREATE", "namespace": "shop",
		"kind": map[string]any{"group": "", "version": "v1", "kind": "Pod"},
	}, request, "the object and the user are gone, the request's shape stays")
	sum := sha256.Sum256([]byte("alice@example.com"))
	user, _ := got.Attributes().Get(policyresult.AttrDecisionUser)
	assert.Equal(t, hex.EncodeToString(sum[:]), user.Str(), "the user is pseudonymised")
}
