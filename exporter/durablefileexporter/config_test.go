// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	storage := component.MustNewID("file_storage")
	custom := createDefaultConfig().(*Config)
	custom.Path = "/var/lib/otelcol-policy/results.jsonl"
	custom.FilePermissions = "0600"
	custom.Sync = false
	custom.Rotation = RotationConfig{MaxMegabytes: 50, MaxBackups: 3}
	custom.TimeoutConfig.Timeout = 10 * time.Second
	custom.RetryConfig.InitialInterval = time.Second
	custom.RetryConfig.MaxInterval = 30 * time.Second
	custom.RetryConfig.MaxElapsedTime = 0
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.StorageID = &storage
	queue.QueueSize = 5000
	custom.QueueConfig.GetOrInsertDefault()
	*custom.QueueConfig.Get() = queue

	defaults := createDefaultConfig().(*Config)
	defaults.Path = "./data/results/policy-results.jsonl"

	for _, tt := range []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: defaults},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: custom},
		{id: component.NewIDWithName(metadata.Type, "no_path"), wantErr: "path must be set"},
		{id: component.NewIDWithName(metadata.Type, "bad_permissions"), wantErr: `file_permissions must be octal permission bits such as "0640", got "rw-r-----"`},
		{id: component.NewIDWithName(metadata.Type, "bad_rotation"), wantErr: "rotation::max_megabytes must not be negative, got -1\nrotation::max_backups must not be negative, got -2"},
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
