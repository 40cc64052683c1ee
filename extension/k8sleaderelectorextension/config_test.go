// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectorextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	defaults := createDefaultConfig().(*Config)
	defaults.LeaseName, defaults.LeaseNamespace = "otelcol-policy", "observability"
	custom := createDefaultConfig().(*Config)
	custom.APIConfig = k8sclient.APIConfig{AuthType: k8sclient.AuthTypeKubeConfig, Context: "prod"}
	custom.LeaseName, custom.LeaseNamespace = "reports", "policy"
	custom.LeaseDuration, custom.RenewDeadline, custom.RetryPeriod = 30*time.Second, 20*time.Second, 5*time.Second

	for _, tt := range []struct {
		name    string
		want    *Config
		wantErr []string
	}{
		{name: "", want: defaults},
		{name: "custom", want: custom},
		{name: "missing", wantErr: []string{"lease_name must be set", "lease_namespace must be set"}},
		{name: "durations", wantErr: []string{
			"renew_deadline (10s) must be longer than retry_period (10s)",
			"lease_duration (5s) must be longer than renew_deadline (10s)",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			for _, w := range tt.wantErr {
				assert.ErrorContains(t, err, w)
			}
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, cfg)
			}
		})
	}
}
