// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Compression values. Snappy compresses the pages of Parquet objects only: few tools read snappy-framed JSON.
const (
	CompressionGzip   = "gzip"
	CompressionZstd   = "zstd"
	CompressionNone   = "none"
	CompressionSnappy = "snappy"
)

// Server-side encryption values, as S3 spells them in the x-amz-server-side-encryption header.
const (
	SSES3  = string(types.ServerSideEncryptionAes256)
	SSEKMS = string(types.ServerSideEncryptionAwsKms)
)

// minPartSize is S3's smallest part of a multipart upload (but the last).
const minPartSize = 5 << 20

// maxPartSize is S3's largest part.
const maxPartSize = 5 << 30

// Config of the s3 exporter.
type Config struct {
	S3Uploader S3UploaderConfig `mapstructure:"s3uploader"`
	// Format of the objects: FormatNDJSON, one JSON line per record (pkg/recordjson), or FormatParquet, one row
	// per record with a column per attribute that queries filter on (pkg/recordparquet).
	Format string `mapstructure:"format"`
	// PartitionAttributes add one Hive partition <name>=<value> per attribute, before the time partitions, so
	// that queries filtering on them (a cluster, a policy engine) read only their objects. A record attribute of
	// the name wins over a resource attribute of the same name, as in the line.
	PartitionAttributes []string `mapstructure:"partition_attributes"`
	// PartitionValueMaxBytes bounds an attribute partition's value in a key (after percent-encoding). A longer
	// value is shortened to a prefix of it, "~" and a hash of the whole value, so that whatever the records
	// hold, every key is within S3's limits (see maxKeyBytes).
	PartitionValueMaxBytes int `mapstructure:"partition_value_max_bytes"`
	// MultipartThreshold is the compressed size above which an object is sent as a multipart upload.
	MultipartThreshold int64 `mapstructure:"multipart_threshold"`
	// MultipartPartSize is the size of the parts of a multipart upload.
	MultipartPartSize int64 `mapstructure:"multipart_part_size"`

	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
}

// S3UploaderConfig holds the settings named as in the contrib awss3 exporter.
type S3UploaderConfig struct {
	Region   string `mapstructure:"region"`
	S3Bucket string `mapstructure:"s3_bucket"`
	// S3Prefix is the first part of every key; leading and trailing slashes are ignored.
	S3Prefix string `mapstructure:"s3_prefix"`
	// S3PartitionFormat formats the record's time (UTC) with strftime directives into the time partitions.
	S3PartitionFormat string `mapstructure:"s3_partition_format"`
	// Endpoint overrides the endpoint derived from the region, for S3-compatible stores; a URL such as
	// "https://minio.example:9000" (http:// disables TLS).
	Endpoint         string `mapstructure:"endpoint"`
	S3ForcePathStyle bool   `mapstructure:"s3_force_path_style"`
	Compression      string `mapstructure:"compression"`
	// StorageClass of the objects; empty leaves the bucket's default (STANDARD).
	StorageClass string `mapstructure:"storage_class"`
	// RoleARN is a role assumed through STS with the credentials of the default chain.
	RoleARN              string `mapstructure:"role_arn"`
	ServerSideEncryption string `mapstructure:"server_side_encryption"`
	SSEKMSKeyID          string `mapstructure:"sse_kms_key_id"`
}

// Validate checks the configuration before the collector starts.
func (c *Config) Validate() error {
	var errs []error
	u := &c.S3Uploader
	if u.S3Bucket == "" {
		errs = append(errs, errors.New("s3uploader::s3_bucket must be set"))
	}
	if u.Region == "" && u.Endpoint == "" {
		errs = append(errs, errors.New("s3uploader::region must be set (it may be left out only with s3uploader::endpoint)"))
	}
	if u.Endpoint != "" {
		if e, err := url.Parse(u.Endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			errs = append(errs, fmt.Errorf("s3uploader::endpoint must be a URL such as \"https://s3.example.com\", got %q", u.Endpoint))
		}
	}
	if err := validatePrefix(u.S3Prefix); err != nil {
		errs = append(errs, err)
	}
	if _, err := parsePartitionFormat(u.S3PartitionFormat); err != nil {
		errs = append(errs, fmt.Errorf("s3uploader::s3_partition_format: %w", err))
	}
	switch {
	case c.Format != FormatNDJSON && c.Format != FormatParquet:
		errs = append(errs, fmt.Errorf("format must be %q or %q, got %q", FormatNDJSON, FormatParquet, c.Format))
	case c.Format == FormatParquet && !slices.Contains([]string{CompressionZstd, CompressionSnappy, CompressionGzip, CompressionNone}, u.Compression):
		errs = append(errs, fmt.Errorf("s3uploader::compression of format parquet (the pages') must be one of zstd, snappy, gzip, none, got %q", u.Compression))
	case c.Format == FormatNDJSON && u.Compression == CompressionSnappy:
		errs = append(errs, errors.New("s3uploader::compression snappy is for format parquet only: NDJSON objects are gzip, zstd or none"))
	case c.Format == FormatNDJSON && !slices.Contains([]string{CompressionGzip, CompressionZstd, CompressionNone}, u.Compression):
		errs = append(errs, fmt.Errorf("s3uploader::compression must be one of gzip, zstd, none, got %q", u.Compression))
	}
	if u.StorageClass != "" && !slices.Contains(types.StorageClass("").Values(), types.StorageClass(u.StorageClass)) {
		errs = append(errs, fmt.Errorf("s3uploader::storage_class %q is not an S3 storage class (such as STANDARD, STANDARD_IA, INTELLIGENT_TIERING)", u.StorageClass))
	}
	switch u.ServerSideEncryption {
	case "", SSES3, SSEKMS:
	default:
		errs = append(errs, fmt.Errorf("s3uploader::server_side_encryption must be %q (SSE-S3) or %q (SSE-KMS), got %q", SSES3, SSEKMS, u.ServerSideEncryption))
	}
	if u.SSEKMSKeyID != "" && u.ServerSideEncryption != SSEKMS {
		errs = append(errs, fmt.Errorf("s3uploader::sse_kms_key_id is only used with server_side_encryption %q", SSEKMS))
	}
	if u.RoleARN != "" && !strings.HasPrefix(u.RoleARN, "arn:") {
		errs = append(errs, fmt.Errorf("s3uploader::role_arn must be an ARN such as \"arn:aws:iam::123456789012:role/otelcol\", got %q", u.RoleARN))
	}
	seen := map[string]string{}
	for _, a := range c.PartitionAttributes {
		name := partitionName(a)
		if a == "" {
			errs = append(errs, errors.New("partition_attributes must not contain an empty name"))
			continue
		}
		if prev, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("partition_attributes %q and %q give the same partition name %q", prev, a, name))
		}
		seen[name] = a
	}
	if c.PartitionValueMaxBytes < minPartitionValueBytes {
		errs = append(errs, fmt.Errorf("partition_value_max_bytes must be at least %d (a shortened value ends with %d bytes of hash), got %d",
			minPartitionValueBytes, shortenedSuffixLen, c.PartitionValueMaxBytes))
	} else if err := c.validateKeyLength(); err != nil {
		errs = append(errs, err)
	}
	if c.MultipartThreshold <= 0 {
		errs = append(errs, fmt.Errorf("multipart_threshold must be positive, got %d", c.MultipartThreshold))
	}
	if c.MultipartPartSize < minPartSize || c.MultipartPartSize > maxPartSize {
		errs = append(errs, fmt.Errorf("multipart_part_size must be between 5 MiB (%d) and 5 GiB, S3's limits, got %d", minPartSize, c.MultipartPartSize))
	}
	return errors.Join(errs...)
}

func validatePrefix(prefix string) error {
	p := strings.Trim(prefix, "/")
	if p == "" {
		return nil
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("s3uploader::s3_prefix must not contain empty, \".\" or \"..\" path segments, got %q", prefix)
		}
	}
	return nil
}

// region is the signing region: S3-compatible stores such as MinIO accept us-east-1 when none is configured.
func (u *S3UploaderConfig) region() string {
	if u.Region == "" {
		return "us-east-1"
	}
	return u.Region
}

// defaultTimeout allows a 16 MiB object through a slow link; exporterhelper's 5 s default does not.
const defaultTimeout = 30 * time.Second
