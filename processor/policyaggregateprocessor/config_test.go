// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyaggregateprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	storage := component.MustNewID("file_storage")
	custom := createDefaultConfig().(*Config)
	custom.Interval = time.Minute
	custom.GroupBy = []string{policyresult.AttrClusterName, policyresult.AttrSource, policyresult.AttrSeverity}
	custom.Results = ResultsDrop
	custom.MaxKeys = 50000
	custom.Storage = &storage
	leader := createDefaultConfig().(*Config)
	shared, elector := component.MustNewIDWithName("file_storage", "shared"), component.MustNewID("k8s_leader_elector")
	leader.Storage, leader.K8sLeaderElector = &shared, &elector

	for _, tt := range []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: createDefaultConfig().(*Config)},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: custom},
		{id: component.NewIDWithName(metadata.Type, "leader"), want: leader},
		{id: component.NewIDWithName(metadata.Type, "leader_without_storage"), wantErr: "k8s_leader_elector needs storage: the state passes from one leader to the next through it"},
		{id: component.NewIDWithName(metadata.Type, "bad_results"), wantErr: `results must be "forward" or "drop", got "keep"`},
		{id: component.NewIDWithName(metadata.Type, "bad_group_by"), wantErr: "group_by[1] is empty\n" +
			`group_by names "policy.name" twice` + "\n" +
			`group_by[3]: "policy.summary.fail" is written by the processor itself`},
		{id: component.NewIDWithName(metadata.Type, "bad_numbers"), wantErr: "interval must be positive, got 0s\nmax_keys must be positive, got -1"},
		{id: component.NewIDWithName(metadata.Type, "empty_group_by"), wantErr: "group_by must name at least one attribute"},
	} {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestDefaultConfigGroupsLikeKyverno(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, []string{"k8s.cluster.name", "policy.source", "policy.name", "policy.resource.namespace"}, cfg.GroupBy)
	assert.Equal(t, 30*time.Second, cfg.Interval)
	assert.Equal(t, ResultsForward, cfg.Results)
	assert.NoError(t, cfg.Validate())
}
