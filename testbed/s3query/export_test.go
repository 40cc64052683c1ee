// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3query

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const bucket = "compliance-evidence"

// startMinIO starts MinIO with the bucket and gives the exporter (through the SDK's environment credentials)
// the root user.
func startMinIO(t testing.TB) *miniotest.Server {
	t.Helper()
	srv := miniotest.Start(t)
	srv.CreateBucket(bucket)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	return srv
}

// exporter is the s3 exporter as its factory builds it, writing f under the prefix f.name, partitioned by
// cluster and hour; no queue, so that each batch is stored when ConsumeLogs returns.
func exporter(t testing.TB, srv *miniotest.Server, f format) func(plog.Logs) {
	t.Helper()
	factory := s3exporter.NewFactory()
	cfg := factory.CreateDefaultConfig().(*s3exporter.Config)
	cfg.S3Uploader.Region = miniotest.Region
	cfg.S3Uploader.S3Bucket = bucket
	cfg.S3Uploader.S3Prefix = f.name
	cfg.S3Uploader.Endpoint = srv.Endpoint()
	cfg.S3Uploader.S3ForcePathStyle = true
	cfg.S3Uploader.Compression = f.compression
	cfg.Format = f.format
	cfg.PartitionAttributes = []string{policyresult.AttrClusterName}
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	require.NoError(t, cfg.Validate())
	ctx := context.Background()
	exp, err := factory.CreateLogs(ctx, exportertest.NewNopSettings(factory.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(ctx, componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return func(ld plog.Logs) { require.NoError(t, exp.ConsumeLogs(ctx, ld)) }
}
