// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const thisModule = "github.com/otelcol-policy/otelcol-policy"

// TestBuilderConfigMatchesGoMod: every upstream module OCB builds is required by go.mod at the same version, so
// the unit tests of this repository run against exactly the components the binary contains.
func TestBuilderConfigMatchesGoMod(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "builder-config.yaml"))
	require.NoError(t, err)
	type entry struct {
		GoMod  string `yaml:"gomod"`
		Import string `yaml:"import"`
	}
	var bc struct {
		Receivers, Processors, Exporters, Extensions, Connectors, Providers []entry
		Replaces                                                            []string
	}
	require.NoError(t, yaml.Unmarshal(raw, &bc))

	required := requiredModules(t, filepath.Join(root, "go.mod"))
	own := 0
	for _, list := range [][]entry{bc.Receivers, bc.Processors, bc.Exporters, bc.Extensions, bc.Connectors, bc.Providers} {
		for _, e := range list {
			path, version, ok := strings.Cut(e.GoMod, " ")
			require.True(t, ok, "gomod %q has no version", e.GoMod)
			if path == thisModule {
				own++
				assert.True(t, strings.HasPrefix(e.Import, thisModule+"/"), "local component %q needs an import path", e.Import)
				_, err := os.Stat(filepath.Join(root, strings.TrimPrefix(e.Import, thisModule+"/")))
				assert.NoError(t, err, "local component %s", e.Import)
				continue
			}
			assert.Equal(t, version, required[path], "go.mod must require %s at the version builder-config.yaml builds", path)
		}
	}
	assert.Positive(t, own, "the distribution includes this repository's components")
	assert.Contains(t, bc.Replaces, thisModule+" => ../..")
}

func requiredModules(t *testing.T, goMod string) map[string]string {
	raw, err := os.ReadFile(goMod)
	require.NoError(t, err)
	mods := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line, _, _ = strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "require "), "//")
		if f := strings.Fields(line); len(f) == 2 && strings.Contains(f[0], ".") {
			mods[f[0]] = f[1]
		}
	}
	return mods
}
