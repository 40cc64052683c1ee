// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

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

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	defaults := createDefaultConfig().(*Config)
	defaults.S3Uploader.Region = "eu-west-1"
	defaults.S3Uploader.S3Bucket = "policy-results"

	storage := component.MustNewID("file_storage")
	custom := createDefaultConfig().(*Config)
	custom.S3Uploader = S3UploaderConfig{
		Region:               "eu-central-1",
		S3Bucket:             "compliance-evidence",
		S3Prefix:             "/otelcol-policy/results/",
		S3PartitionFormat:    "year=%Y/month=%m/day=%d/hour=%H",
		Endpoint:             "https://minio.storage.svc:9000",
		S3ForcePathStyle:     true,
		Compression:          CompressionZstd,
		StorageClass:         "STANDARD_IA",
		RoleARN:              "arn:aws:iam::123456789012:role/otelcol-policy",
		ServerSideEncryption: SSEKMS,
		SSEKMSKeyID:          "arn:aws:kms:eu-central-1:123456789012:key/11111111-2222-3333-4444-555555555555",
	}
	custom.PartitionAttributes = []string{"k8s.cluster.name", "policy.source"}
	custom.PartitionValueMaxBytes = 64
	custom.MultipartThreshold = 32 << 20
	custom.MultipartPartSize = 16 << 20
	custom.TimeoutConfig.Timeout = time.Minute
	custom.RetryConfig.InitialInterval = time.Second
	custom.RetryConfig.MaxInterval = 30 * time.Second
	custom.RetryConfig.MaxElapsedTime = 0
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.StorageID = &storage
	queue.QueueSize = 5000
	*custom.QueueConfig.Get() = queue

	noRegion := createDefaultConfig().(*Config)
	noRegion.S3Uploader.S3Bucket = "policy-results"
	noRegion.S3Uploader.Endpoint = "http://127.0.0.1:9000"
	noRegion.S3Uploader.Compression = CompressionNone
	noRegion.S3Uploader.ServerSideEncryption = SSES3

	parquet := createDefaultConfig().(*Config)
	parquet.S3Uploader.Region = "us-east-1"
	parquet.S3Uploader.S3Bucket = "policy-results"
	parquet.S3Uploader.Compression = CompressionSnappy
	parquet.Format = FormatParquet

	for _, tt := range []struct {
		name    string
		want    *Config
		wantErr string
	}{
		{name: "", want: defaults},
		{name: "parquet", want: parquet},
		{name: "bad_format", wantErr: `format must be "ndjson" or "parquet", got "orc"`},
		{name: "snappy_ndjson", wantErr: "s3uploader::compression snappy is for format parquet only: NDJSON objects are gzip, zstd or none"},
		{name: "parquet_lz4", wantErr: `s3uploader::compression of format parquet (the pages') must be one of zstd, snappy, gzip, none, got "lz4"`},
		{name: "custom", want: custom},
		{name: "endpoint_without_region", want: noRegion},
		{name: "empty", wantErr: "s3uploader::s3_bucket must be set\n" +
			"s3uploader::region must be set (it may be left out only with s3uploader::endpoint)"},
		{name: "bad_values", wantErr: `s3uploader::endpoint must be a URL such as "https://s3.example.com", got "minio:9000"` + "\n" +
			`s3uploader::s3_prefix must not contain empty, "." or ".." path segments, got "a/../b"` + "\n" +
			`s3uploader::compression must be one of gzip, zstd, none, got "lz4"` + "\n" +
			`s3uploader::storage_class "COLD" is not an S3 storage class (such as STANDARD, STANDARD_IA, INTELLIGENT_TIERING)` + "\n" +
			`s3uploader::server_side_encryption must be "AES256" (SSE-S3) or "aws:kms" (SSE-KMS), got "aws:kms:dsse"` + "\n" +
			`s3uploader::sse_kms_key_id is only used with server_side_encryption "aws:kms"` + "\n" +
			`s3uploader::role_arn must be an ARN such as "arn:aws:iam::123456789012:role/otelcol", got "otelcol-policy"` + "\n" +
			`partition_attributes "k8s.cluster.name" and "k8s_cluster_name" give the same partition name "k8s_cluster_name"` + "\n" +
			`partition_attributes must not contain an empty name` + "\n" +
			`partition_value_max_bytes must be at least 32 (a shortened value ends with 17 bytes of hash), got 31` + "\n" +
			`multipart_threshold must be positive, got 0` + "\n" +
			`multipart_part_size must be between 5 MiB (5242880) and 5 GiB, S3's limits, got 1048576` + "\n" +
			`timeoutconfig: timeout value must be greater than or equal to 0`},
		{name: "kms_key_without_kms", wantErr: `s3uploader::sse_kms_key_id is only used with server_side_encryption "aws:kms"`},
		{name: "empty_partition_format", wantErr: "s3uploader::s3_partition_format: must not be empty"},
		{name: "dotdot_partition_format", wantErr: `s3uploader::s3_partition_format: "../%Y" gives paths such as "../2026", with an empty, "." or ".." segment`},
		{name: "bad_directive", wantErr: `s3uploader::s3_partition_format: "date=%Y-%m-%d/%Q": unsupported directive %Q (use %Y %y %m %d %H %M %S %j %F %%)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, "date=%Y-%m-%d/hour=%H", cfg.S3Uploader.S3PartitionFormat)
	assert.Equal(t, CompressionGzip, cfg.S3Uploader.Compression)
	assert.Equal(t, FormatNDJSON, cfg.Format)
	assert.Equal(t, int64(16<<20), cfg.MultipartThreshold)
	assert.Equal(t, int64(8<<20), cfg.MultipartPartSize)
	assert.Equal(t, 128, cfg.PartitionValueMaxBytes)
	assert.Equal(t, 30*time.Second, cfg.TimeoutConfig.Timeout)
	assert.True(t, cfg.QueueConfig.HasValue())
	assert.True(t, cfg.RetryConfig.Enabled)
}
