// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policymetricsconnector

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	storage := component.MustNewID("file_storage")
	custom := createDefaultConfig().(*Config)
	custom.Interval = time.Minute
	custom.Results.Labels = []string{policyresult.AttrClusterName, policyresult.AttrSource, policyresult.AttrPolicy, policyresult.AttrResourceNamespace}
	custom.Decisions = DecisionsConfig{Labels: []string{policyresult.AttrPolicy, policyresult.AttrResult}, MaxSeries: 500}
	custom.MaxKeys = 20000
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
		{id: component.NewIDWithName(metadata.Type, "per_result"), wantErr: `results::labels: "policy.result.key" has a value per result and would make one series each` + "\n" +
			`results::labels: "policy.result" is always a label` + "\n" +
			`decisions::labels: "policy.decision.id" has a value per result and would make one series each` + "\n" +
			"decisions::labels[1] is empty\n" +
			`decisions::labels names "policy.name" twice`},
		{id: component.NewIDWithName(metadata.Type, "bad_numbers"), wantErr: "interval must be positive, got -1s\n" +
			"max_keys must be positive, got 0\ndecisions::max_series must be positive, got 0"},
	} {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}
