// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadata"
)

func TestCreateDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, 1000, cfg.MaxResultsPerRequest)
	assert.Equal(t, 4<<20-64<<10, cfg.MaxRequestBytes)
	assert.Equal(t, configgrpc.NewDefaultClientConfig(), cfg.ClientConfig)
	assert.Equal(t, 5*time.Second, cfg.TimeoutConfig.Timeout)
	assert.True(t, cfg.RetryConfig.Enabled)
	require.True(t, cfg.QueueConfig.HasValue())
	assert.Equal(t, exporterhelper.NewDefaultQueueConfig(), *cfg.QueueConfig.Get())
	assert.Nil(t, cfg.ExtraMetadata)
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	defaults := createDefaultConfig().(*Config)
	defaults.ClientConfig.Endpoint = "results.example.com:4317"

	storage := component.MustNewID("file_storage")
	custom := createDefaultConfig().(*Config)
	cc := &custom.ClientConfig
	cc.Endpoint = "results.example.com:443"
	cc.Compression = "zstd"
	cc.TLS.CAFile = "/etc/results/ca.pem"
	cc.TLS.CertFile = "/etc/results/client.pem"
	cc.TLS.KeyFile = "/etc/results/client-key.pem"
	cc.TLS.ServerName = "results.internal"
	cc.Auth = configoptional.Some(configauth.Config{AuthenticatorID: component.MustNewID("bearertokenauth")})
	cc.Headers.Set("authorization", "Bearer s3cret-token")
	cc.Headers.Set("x-tenant", "shop")
	cc.Keepalive = configoptional.Some(configgrpc.KeepaliveClientConfig{Time: 30 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true})
	cc.BalancerName = "round_robin"
	cc.WaitForReady = true
	custom.ExtraMetadata = map[string]string{"k8s.cluster.name": "prod-eu-1", "environment": "production"}
	custom.MaxResultsPerRequest = 250
	custom.MaxRequestBytes = 1_000_000
	custom.TimeoutConfig.Timeout = 20 * time.Second
	custom.RetryConfig.InitialInterval = time.Second
	custom.RetryConfig.MaxInterval = 30 * time.Second
	custom.RetryConfig.MaxElapsedTime = 0
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.StorageID = &storage
	queue.QueueSize = 5000
	queue.NumConsumers = 2
	custom.QueueConfig = configoptional.Some(queue)

	for _, tt := range []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: defaults},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: custom},
		{id: component.NewIDWithName(metadata.Type, "no_endpoint"), wantErr: "endpoint must be set"},
		{id: component.NewIDWithName(metadata.Type, "bad_limits"),
			wantErr: "max_results_per_request must be positive, got 0\nmax_request_bytes must be positive, got -1"},
		{id: component.NewIDWithName(metadata.Type, "bad_endpoint"), wantErr: "clientconfig: address results.example.com: missing port in address"},
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
