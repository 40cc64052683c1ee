// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

func TestLoadConfig(t *testing.T) {
	// The defaults come from the environment: empty here, so that the test sees only the file.
	t.Setenv(envPodName, "")
	t.Setenv(envPodNamespace, "")
	t.Setenv(envPodUID, "")
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	defaults := createDefaultConfig().(*Config)
	defaults.PodName, defaults.PodNamespace, defaults.PodUID = "otelcol-policy-7d9f8-abcde", "otelcol-policy", "6f1c2f0e-8b7a-4a52-9d2e-0c3b5a1e7f44"
	custom := createDefaultConfig().(*Config)
	custom.APIConfig = k8sclient.APIConfig{AuthType: k8sclient.AuthTypeKubeConfig, Context: "prod"}
	custom.PodName, custom.PodNamespace, custom.PodUID = "collector-0", "policy", "0d0b5d5e-4f5a-4d63-9a0e-6b2f1b3c4d5e"
	custom.QPS, custom.Burst = 0.1, 5

	for _, tt := range []struct {
		name    string
		want    *Config
		wantErr []string
	}{
		{name: "", want: defaults},
		{name: "custom", want: custom},
		{name: "missing", wantErr: []string{
			"pod_name must be set (by default from $K8S_POD_NAME: set it from the downward API field metadata.name)",
			"pod_namespace must be set (by default from $K8S_POD_NAMESPACE: set it from the downward API field metadata.namespace)",
			"pod_uid must be set (by default from $K8S_POD_UID: set it from the downward API field metadata.uid)",
		}},
		{name: "limits", wantErr: []string{"qps must be positive; got 0", "burst must be at least 1; got 0"}},
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
