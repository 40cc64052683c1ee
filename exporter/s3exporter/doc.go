// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package s3exporter writes log records to S3 (or an S3-compatible store such as MinIO) as newline-delimited
// JSON, one flat object per record (pkg/recordjson), or as Parquet files, one row per record
// (pkg/recordparquet), in Hive-style partitions that query engines (Athena, DuckDB, ClickHouse, Spark) read
// directly. Each object is named after a hash of its records, so an upload that
// exporterhelper retries, or that a persistent queue replays after a restart, overwrites itself instead of
// adding a duplicate.
package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"
