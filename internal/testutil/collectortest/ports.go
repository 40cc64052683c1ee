// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// DefaultPorts are the loopback ports of the default config's listeners in a test: Metrics serves the
// self-metrics, PolicyMetrics the prometheus exporter's policy_metrics series.
type DefaultPorts struct{ Health, GRPC, HTTP, OPA, Metrics, PolicyMetrics int }

// DefaultConfig is the embedded default config, what `make run` runs.
func DefaultConfig(t testing.TB) string {
	return filepath.Join(RepoRoot(t), "distributions", "otelcol-policy", "config.yaml")
}

// DefaultConfigOverlay writes, in dir, an overlay that moves every listener of the default config to a free port,
// so that tests do not collide with each other or with a `make run` on the same machine; nothing else of the
// config changes. It returns the overlay's path, to pass after DefaultConfig.
func DefaultConfigOverlay(t testing.TB, dir string) (string, DefaultPorts) {
	t.Helper()
	p := DefaultPorts{Health: FreePort(t), GRPC: FreePort(t), HTTP: FreePort(t), OPA: FreePort(t), Metrics: FreePort(t),
		PolicyMetrics: FreePort(t)}
	path := filepath.Join(dir, "ports.yaml")
	cfg := fmt.Sprintf(`
extensions:
  health_check:
    endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
  decision_logs:
    opa:
      endpoint: 127.0.0.1:%d
exporters:
  prometheus:
    endpoint: 127.0.0.1:%d
service:
  telemetry:
%s`, p.Health, p.GRPC, p.HTTP, p.OPA, p.PolicyMetrics, MetricsTelemetry(p.Metrics))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, p
}

// HealthURL is the health_check endpoint on port.
func HealthURL(port int) string { return fmt.Sprintf("http://127.0.0.1:%d/", port) }

// MetricsTelemetry is the service::telemetry::metrics block of a config (indented for its place there) that
// serves the self-metrics to Prometheus on a loopback port.
func MetricsTelemetry(port int) string {
	return fmt.Sprintf(`    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, port)
}
