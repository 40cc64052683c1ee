// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package dashboards

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

func TestExpand(t *testing.T) {
	got, err := Expand(`sum(rate(x{a=~"$a", b=~"${b}"}[$__rate_interval])) / sum(increase(x[$__range]))`, map[string]string{"a": ".*", "b": "web"}, "5m")
	require.NoError(t, err)
	assert.Equal(t, `sum(rate(x{a=~".*", b=~"web"}[5m])) / sum(increase(x[5m]))`, got)
	_, err = Expand(`x{a=~"$missing"}`, nil, "5m")
	assert.ErrorContains(t, err, "missing")
}

func TestLabelValues(t *testing.T) {
	q, label, err := LabelValues(`label_values(policy_results{k8s_cluster_name=~"$cluster"}, policy_name)`)
	require.NoError(t, err)
	assert.Equal(t, `count by (policy_name) (policy_results{k8s_cluster_name=~"$cluster"})`, q)
	assert.Equal(t, "policy_name", label)
	_, _, err = LabelValues(`query_result(up)`)
	assert.Error(t, err)
}

// TestLoadTheChartsDashboards: every dashboard of the chart loads, with panel queries and label_values variables.
func TestLoadTheChartsDashboards(t *testing.T) {
	all, err := Load(filepath.Join(collectortest.RepoRoot(t), Dir))
	require.NoError(t, err)
	require.Len(t, all, 3)
	for _, d := range all {
		assert.NotEmpty(t, d.Queries, d.File)
		for _, q := range d.Queries {
			assert.NotEmpty(t, q.Expr, "%s %s", d.File, q)
		}
		for _, v := range d.Variables {
			_, _, err := LabelValues(v.Query)
			assert.NoError(t, err, "%s variable %s", d.File, v.Name)
		}
	}
}
