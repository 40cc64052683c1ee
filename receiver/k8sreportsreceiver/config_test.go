// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	storage := component.MustNewID("file_storage")
	all := createDefaultConfig().(*Config)
	all.AuthType = k8sclient.AuthTypeKubeConfig
	all.Context = "staging"
	all.ClusterName = "prod-eu-1"
	all.Kinds = KindsConfig{PolicyReports: true, EphemeralReports: true, ComplianceRemediations: true,
		ClusterComplianceReports: true}
	all.Namespaces = NamespacesConfig{Include: []string{"shop", "payments"}, Exclude: []string{"kube-system"}}
	all.LabelSelector = "app.kubernetes.io/managed-by=kyverno"
	all.Storage = &storage
	all.EmitResolved = false
	all.DiscoveryInterval = time.Minute
	all.PageSize = 200
	all.MaxBatchRecords = 1000
	all.MaxBatchBytes, all.MaxReportRecords, all.MaxReportBytes = 1<<20, 20_000, 8<<20
	all.QPS, all.Burst = 20, 40

	for _, tt := range []struct {
		name    string
		want    *Config
		wantErr []string
	}{
		{name: "", want: createDefaultConfig().(*Config)},
		{name: "all", want: all},
		{name: "bad_auth", wantErr: []string{`auth_type must be one of serviceAccount, kubeConfig, none; got "token"`}},
		{name: "context_without_kubeconfig", wantErr: []string{"context applies to auth_type kubeConfig only"}},
		{name: "none_and_storage", wantErr: []string{"initial_sync: none contradicts storage"}},
		{name: "bad_selector", wantErr: []string{"label_selector:"}},
		{name: "no_kinds", wantErr: []string{"kinds: every report kind is disabled"}},
		{name: "limits", wantErr: []string{
			`initial_sync must be all or none; got "some"`, "discovery_interval must be at least 1s; got 10ms",
			"page_size must be positive; got 0", "max_batch_records must be positive; got -1", "qps and burst must be positive",
			"max_batch_bytes must be at least 4096; got 100", "max_report_records must be positive; got 0",
			"max_report_bytes must be at least 4096; got 4095",
		}},
		{name: "namespace_conflict", wantErr: []string{`namespace "shop" is both included and excluded`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if len(tt.wantErr) > 0 {
				for _, w := range tt.wantErr {
					assert.ErrorContains(t, err, w)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestNamespaceFilter(t *testing.T) {
	c := &Config{Namespaces: NamespacesConfig{Include: []string{"shop", "payments"}, Exclude: []string{"payments"}}}
	assert.True(t, c.namespaceAllowed("shop"))
	assert.False(t, c.namespaceAllowed("payments"), "exclude wins")
	assert.False(t, c.namespaceAllowed("other"))
	assert.True(t, c.namespaceAllowed(""), "cluster-scoped reports are not filtered by namespace")
	c = &Config{Namespaces: NamespacesConfig{Exclude: []string{"kube-system"}}}
	assert.True(t, c.namespaceAllowed("shop"))
	assert.False(t, c.namespaceAllowed("kube-system"))
}
