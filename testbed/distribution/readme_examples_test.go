// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"maps"
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

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// collectorSections are the top-level keys of a collector config.
var collectorSections = []string{"extensions", "receivers", "processors", "exporters", "connectors", "service"}

// yamlBlock is a fenced yaml block of a README and the line it starts on.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// stand-ins define the components a README's pipeline names but leaves to the rest of the config.
var standIns = map[string]map[string]any{
	"receivers::otlp":            {"protocols": map[string]any{"http": map[string]any{"endpoint": "127.0.0.1:4318"}}},
	"receivers::k8s_reports":     {},
	"receivers::decision_logs":   {"opa": map[string]any{"endpoint": "127.0.0.1:8182"}},
	"processors::memory_limiter": {"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20},
	"exporters::debug":           {},
	"exporters::otlp_http":       {"endpoint": "https://otlp.example.com"},
	"extensions::health_check":   {},
	"extensions::file_storage":   {},
}

// completeConfig makes a README block a config the collector loads. A README shows the part of a config its
// component needs; the rest is added: an otlp receiver or a debug exporter when the block defines none, a
// stand-in for a component its pipelines name but it leaves out, every extension it defines in
// service::extensions (and a stand-in for one it names but leaves out), and, without pipelines, a logs pipeline through everything it defines (every component a
// README shows takes logs). A file_storage directory, a volume in production, is dir.
func completeConfig(t *testing.T, cfg map[string]any, dir string) map[string]any {
	t.Helper()
	section := func(name string) map[string]any {
		m, _ := cfg[name].(map[string]any)
		if m == nil {
			m = map[string]any{}
			cfg[name] = m
		}
		return m
	}
	ids := func(name string) []any {
		var out []any
		for id := range section(name) {
			out = append(out, id)
		}
		slices.SortFunc(out, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		return out
	}
	service := section("service")
	named, _ := service["extensions"].([]any)
	for _, id := range named {
		if _, ok := section("extensions")[id.(string)]; ok {
			continue
		}
		standIn, ok := standIns["extensions::"+id.(string)]
		require.True(t, ok, "service::extensions names %s, which the block does not define and has no stand-in", id)
		section("extensions")[id.(string)] = maps.Clone(standIn)
	}
	for id, ext := range section("extensions") {
		if ext == nil {
			ext = map[string]any{}
			section("extensions")[id] = ext
		}
		if m, ok := ext.(map[string]any); ok && strings.Split(id, "/")[0] == "file_storage" {
			m["directory"] = dir
		}
	}
	pipelines, _ := service["pipelines"].(map[string]any)
	if len(pipelines) == 0 {
		if len(section("receivers")) == 0 {
			section("receivers")["otlp"] = standIns["receivers::otlp"]
		}
		if len(section("exporters")) == 0 {
			section("exporters")["debug"] = standIns["exporters::debug"]
		}
		pipelines = map[string]any{"logs": map[string]any{
			"receivers": ids("receivers"), "processors": ids("processors"), "exporters": ids("exporters"),
		}}
		service["pipelines"] = pipelines
	}
	for _, p := range pipelines {
		for _, kind := range []string{"receivers", "processors", "exporters"} {
			named, _ := p.(map[string]any)[kind].([]any)
			for _, id := range named {
				if _, ok := section(kind)[id.(string)]; ok {
					continue
				}
				if _, ok := section("connectors")[id.(string)]; ok {
					continue
				}
				standIn, ok := standIns[kind+"::"+id.(string)]
				require.True(t, ok, "the pipeline names %s %s, which the block does not define and has no stand-in", kind, id)
				section(kind)[id.(string)] = standIn
			}
		}
	}
	if _, ok := service["extensions"]; !ok {
		service["extensions"] = ids("extensions")
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
				out, err := yaml.Marshal(completeConfig(t, cfg, t.TempDir()))
				require.NoError(t, err)
				path := filepath.Join(t.TempDir(), "config.yaml")
				require.NoError(t, os.WriteFile(path, out, 0o600))
				cmd := exec.Command(collectortest.Binary(t), "validate", "--config="+path)
				// Every variable the block names has a value: exampleEnv's, else a placeholder.
				cmd.Env = append(os.Environ(), exampleEnv...)
				for _, m := range envRef.FindAllStringSubmatch(string(block), -1) {
					if !slices.ContainsFunc(exampleEnv, func(e string) bool { return strings.HasPrefix(e, m[1]+"=") }) {
						cmd.Env = append(cmd.Env, m[1]+"=example")
					}
				}
				res, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s:%d\n%s\n%s", rel, line, res, out)
			})
			validated++
		}
	}
	require.GreaterOrEqual(t, validated, 15, "the components' example configs")
}
