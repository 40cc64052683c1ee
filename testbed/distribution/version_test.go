// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// releaseVersion is the distribution's version, written once in the repository's VERSION file: the files that
// cannot read it (OCB's manifest, the chart, the manifests' image tags, the docs' commands) are checked against
// it by TestVersionWrittenOnce.
func releaseVersion(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "VERSION"))
	require.NoError(t, err)
	v := strings.TrimSpace(string(b))
	require.Regexp(t, `^\d+\.\d+\.\d+$`, v, "VERSION")
	return v
}

// ourImageTag finds the tags of this distribution's image (otelcol-policy:TAG, with or without a registry).
var ourImageTag = regexp.MustCompile("(?m)(?:^|[\\s/=`])otelcol-policy:(\\d+\\.\\d+\\.\\d+)")

// TestVersionWrittenOnce: every file that names the distribution's version names the one in VERSION.
func TestVersionWrittenOnce(t *testing.T) {
	root := collectortest.RepoRoot(t)
	want := releaseVersion(t)
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		return b
	}

	var builder struct {
		Dist struct{ Version string } `json:"dist"`
	}
	require.NoError(t, yaml.Unmarshal(read("builder-config.yaml"), &builder))
	assert.Equal(t, want, builder.Dist.Version, "builder-config.yaml: dist.version")

	var chart struct{ Version, AppVersion string }
	require.NoError(t, yaml.Unmarshal(read("distributions/otelcol-policy/helm/otelcol-policy/Chart.yaml"), &chart))
	assert.Equal(t, want, chart.Version, "Chart.yaml: version")
	assert.Equal(t, want, chart.AppVersion, "Chart.yaml: appVersion")

	var kustomization struct {
		Images []struct{ Name, NewTag string } `json:"images"`
	}
	require.NoError(t, yaml.Unmarshal(read("distributions/otelcol-policy/kubernetes/kustomization.yaml"), &kustomization))
	require.NotEmpty(t, kustomization.Images)
	for _, img := range kustomization.Images {
		assert.Equal(t, want, img.NewTag, "kubernetes/kustomization.yaml: images: %s", img.Name)
	}

	// The image tags of the manifests, the Dockerfile's and the docs' commands.
	found := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "_build", "bin", "data", filepath.Join("testbed", "results"):
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".md" && d.Name() != "Dockerfile" {
			return nil
		}
		for _, m := range ourImageTag.FindAllSubmatch(read(rel), -1) {
			found++
			assert.Equal(t, want, string(m[1]), "%s: the image tag otelcol-policy:%s", rel, m[1])
		}
		return nil
	}))
	assert.Positive(t, found, "no otelcol-policy:TAG found: the pattern no longer matches the files")

	t.Run("binary", func(t *testing.T) {
		out, err := exec.Command(collectortest.Binary(t), "--version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, "otelcol-policy version "+want, strings.TrimSpace(string(out)))
	})
}
