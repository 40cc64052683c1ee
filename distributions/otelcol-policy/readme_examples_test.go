// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/collectortest"
)

// collectorSections are the top-level keys of a collector config.
var collectorSections = []string{"extensions", "receivers", "processors", "exporters", "connectors", "service"}

// yamlBlock is a fenced yaml block of a README and the line it starts on.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// completeConfig makes a README block a config the collector loads: a whole config is used as it is; a block
// that only defines components gets what it lacks: an otlp receiver or a debug exporter if it defines none,
// every extension it defines in service::extensions, and a logs pipeline through everything it defines (every
// component of this distribution a README shows takes logs).
func completeConfig(cfg map[string]any) map[string]any {
	if _, ok := cfg["service"]; ok {
		return cfg
	}
	ids := func(section string) []any {
		m, _ := cfg[section].(map[string]any)
		var out []any
		for id := range m {
			out = append(out, id)
		}
		slices.SortFunc(out, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		return out
	}
	if len(ids("receivers")) == 0 {
		cfg["receivers"] = map[string]any{"otlp": map[string]any{"protocols": map[string]any{"http": map[string]any{"endpoint": "127.0.0.1:4318"}}}}
	}
	if len(ids("exporters")) == 0 {
		cfg["exporters"] = map[string]any{"debug": map[string]any{}}
	}
	cfg["service"] = map[string]any{
		"extensions": ids("extensions"),
		"pipelines": map[string]any{"logs": map[string]any{
			"receivers": ids("receivers"), "processors": ids("processors"), "exporters": ids("exporters"),
		}},
	}
	return cfg
}

// TestComponentREADMEExamplesLoad validates every collector config of the components' READMEs with the
// distribution binary, completed as completeConfig says when it is a part of one. Blocks that are not collector
// configs (Kubernetes objects, docker compose files) are named and left out; any other shape fails.
func TestComponentREADMEExamplesLoad(t *testing.T) {
	root := collectortest.RepoRoot(t)
	var readmes []string
	for _, kind := range []string{"receiver", "processor", "connector", "exporter", "extension"} {
		m, err := filepath.Glob(filepath.Join(root, kind, "*", "README.md"))
		require.NoError(t, err)
		readmes = append(readmes, m...)
	}
	require.GreaterOrEqual(t, len(readmes), 10, "the components' READMEs")

	validated := 0
	for _, readme := range readmes {
		md, err := os.ReadFile(readme)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, readme)
		require.NoError(t, err)
		for _, m := range yamlBlock.FindAllSubmatchIndex(md, -1) {
			line := 1 + strings.Count(string(md[:m[0]]), "\n")
			block := md[m[2]:m[3]]
			var cfg map[string]any
			require.NoError(t, yaml.Unmarshal(block, &cfg), "%s:%d", rel, line)
			if _, k8s := cfg["apiVersion"]; k8s {
				continue // a Kubernetes object
			}
			if _, compose := cfg["services"]; compose {
				continue // a docker compose file
			}
			for k := range cfg {
				require.Contains(t, collectorSections, k, "%s:%d: a yaml block is a collector config, a part of one, or a Kubernetes object", rel, line)
			}
			t.Run(strings.ReplaceAll(filepath.Dir(rel), "/", "_")+"_line_"+strconv.Itoa(line), func(t *testing.T) {
				out, err := yaml.Marshal(completeConfig(cfg))
				require.NoError(t, err)
				path := filepath.Join(t.TempDir(), "config.yaml")
				require.NoError(t, os.WriteFile(path, out, 0o600))
				cmd := exec.Command(collectortest.Binary(t), "validate", "--config="+path)
				cmd.Env = append(os.Environ(), exampleEnv...)
				res, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s:%d\n%s\n%s", rel, line, res, out)
			})
			validated++
		}
	}
	require.GreaterOrEqual(t, validated, 15, "the components' example configs")
}
