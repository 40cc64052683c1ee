// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

func TestCreateDefaultConfigNeedsABucketAndARegion(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	err := cfg.Validate()
	assert.ErrorContains(t, err, "s3uploader::s3_bucket must be set")
	assert.ErrorContains(t, err, "s3uploader::region must be set")
	cfg.S3Uploader.S3Bucket = "policy-results"
	cfg.S3Uploader.Region = "eu-west-1"
	assert.NoError(t, cfg.Validate())
}

func TestCreateLogs(t *testing.T) {
	f := NewFactory()
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), f.CreateDefaultConfig())
	require.NoError(t, err)
	assert.False(t, exp.Capabilities().MutatesData)
	require.NoError(t, exp.Shutdown(context.Background()), "shutting down what never started")
}

// Creation builds the object keys' layout and the codec: a configuration the collector would have refused
// fails there too.
func TestCreateLogsRefusesAnUnknownCompression(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.S3Uploader.Compression = "brotli"
	assert.ErrorContains(t, cfg.Validate(), `s3uploader::compression must be one of gzip, zstd, none, got "brotli"`)
	_, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	assert.EqualError(t, err, `unknown compression "brotli"`)
}
