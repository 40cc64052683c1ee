// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The README's ClusterRole grants exactly the resources of every kind: what a user copies is neither short of
// a kind nor wider than what the receiver reads.
func TestREADMEClusterRoleIsTheKinds(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(readme), "Least-privilege RBAC for the receiver")
	require.True(t, found)
	_, rest, found = strings.Cut(rest, "```yaml\n")
	require.True(t, found)
	block, _, found := strings.Cut(rest, "```")
	require.True(t, found)
	var role struct {
		Kind  string
		Rules []struct {
			APIGroups []string `json:"apiGroups"`
			Resources []string
			Verbs     []string
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(block), &role))
	require.Equal(t, "ClusterRole", role.Kind)

	granted := map[string][]string{}
	for _, r := range role.Rules {
		assert.Equal(t, []string{"get", "list", "watch"}, r.Verbs, "%v: read only", r.APIGroups)
		for _, g := range r.APIGroups {
			granted[g] = append(granted[g], r.Resources...)
		}
	}
	want := map[string][]string{}
	for _, k := range enabledKinds(allKinds) {
		if len(k.resources) == 0 {
			want[k.groupVersion.Group] = append(want[k.groupVersion.Group], "*")
			continue
		}
		want[k.groupVersion.Group] = append(want[k.groupVersion.Group], k.resources...)
	}
	for _, m := range []map[string][]string{granted, want} {
		for g := range m {
			slices.Sort(m[g])
		}
	}
	assert.Equal(t, want, granted)
}
