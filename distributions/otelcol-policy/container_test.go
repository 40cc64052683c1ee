// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/collectortest"
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

// listeners are the host:port endpoints a config serves: every `endpoint` that is one (a Unix socket's path is
// not) and the self-metrics reader's host and port.
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
	readers, _ := cfg["service"].(map[string]any)["telemetry"].(map[string]any)["metrics"].(map[string]any)["readers"].([]any)
	for _, r := range readers {
		prom, ok := r.(map[string]any)["pull"].(map[string]any)["exporter"].(map[string]any)["prometheus"].(map[string]any)
		require.True(t, ok, "a pull reader with a prometheus exporter: %v", r)
		out = append(out, net.JoinHostPort(prom["host"].(string), strconv.Itoa(int(prom["port"].(float64)))))
	}
	sort.Strings(out)
	return out
}

// TestContainerConfig: the image runs config.container.yaml, which is the default config's pipeline listening
// on all interfaces, and EXPOSEs exactly the ports it serves; the binary validates it.
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
	require.Len(t, ports, 5, "OTLP gRPC and HTTP, OPA uploads, health_check, self-metrics")
	assert.ElementsMatch(t, ports, strings.Fields(strings.Join(final.all("EXPOSE"), " ")), "EXPOSE is what the container config serves")

	// The same pipeline as the default config: its listeners moved from loopback, nothing else changed.
	raw, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	require.NoError(t, err)
	var local map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(strings.ReplaceAll(string(raw), "127.0.0.1", "0.0.0.0")), &local))
	assert.Equal(t, local, container, "config.container.yaml is config.yaml on 0.0.0.0")
	for _, l := range listeners(t, loadYAML(t, filepath.Join(dir, "config.yaml"))) {
		assert.True(t, strings.HasPrefix(l, "127.0.0.1:"), "%s: the default config listens on loopback only", l)
	}

	out, err := exec.Command(collectortest.Binary(t), "validate", "--config="+filepath.Join(dir, "config.container.yaml")).CombinedOutput()
	require.NoError(t, err, string(out))
}
