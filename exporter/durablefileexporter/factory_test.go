// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

func TestCreateDefaultConfigNeedsAPath(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.EqualError(t, cfg.Validate(), "path must be set")
	cfg.Path = "/var/lib/otelcol/results.jsonl"
	assert.NoError(t, cfg.Validate())
}

// The factory's exporter has the default sending queue, which Shutdown drains into the file.
func TestCreateLogsWithTheDefaultQueue(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Path = filepath.Join(t.TempDir(), "results.jsonl")
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	assert.False(t, exp.Capabilities().MutatesData)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultLogs(3, "latest tag")))
	require.NoError(t, exp.Shutdown(context.Background()))

	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 1)
	assert.Equal(t, 3, lines[0].LogRecordCount())
}

func TestInvalidConfigIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Path = "results.jsonl"
	cfg.FilePermissions = "rw-r-----"
	assert.EqualError(t, cfg.Validate(), `file_permissions must be octal permission bits such as "0640", got "rw-r-----"`)
}
