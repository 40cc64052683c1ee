// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// TestKafkaUnsafeConfigsAreRefused: a kafka exporter that would send its SASL password in clear text, or write to
// any topic a record names, was accepted silently. The binary now refuses both configurations with an error
// that says what to do, and accepts them once the operator says so.
func TestKafkaUnsafeConfigsAreRefused(t *testing.T) {
	for _, tt := range []struct {
		name, exporter, wantErr string
	}{
		{"sasl_plain_without_tls", `
    auth:
      sasl: {mechanism: PLAIN, username: collector, password: secret}`,
			"auth::sasl with mechanism PLAIN and without auth::tls sends the password in clear text"},
		{"sasl_scram_without_tls", `
    auth:
      sasl: {mechanism: SCRAM-SHA-512, username: collector, password: secret}`,
			"auth::sasl with mechanism SCRAM-SHA-512 and without auth::tls"},
		{"topic_from_attribute_without_allowlist", `
    topic_from_attribute: kafka.topic`,
			"topic_allowlist must list the topics topic_from_attribute may name"},
		{"acknowledged", `
    auth:
      sasl: {mechanism: PLAIN, username: collector, password: secret, insecure_plaintext: true}
    topic_from_attribute: kafka.topic
    topic_allowlist: [policy-results, policy-decisions]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kafka.yaml")
			require.NoError(t, os.WriteFile(path, []byte(`
receivers:
  otlp:
    protocols:
      http:
exporters:
  kafka:
    brokers: ["kafka:9092"]`+tt.exporter+`
service:
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [kafka]
`), 0o600))
			out, err := exec.Command(collectortest.Binary(t), "validate", "--config="+path).CombinedOutput()
			if tt.wantErr == "" {
				require.NoError(t, err, "%s", out)
				return
			}
			require.Error(t, err, "the configuration is refused")
			assert.Contains(t, string(out), tt.wantErr)
			assert.NotContains(t, string(out), "secret", "the password is not echoed")
		})
	}
}
