// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package kafkaexporter produces policy result log records to Kafka, one Kafka record per log record, keyed by
// the result's key so that a compacted topic keeps the latest outcome of every result. Values are recordjson
// lines, which a consumer reads without knowing OTLP, or single-record OTLP protobuf. A batch is acknowledged
// only once Kafka acknowledged every record of it, through an idempotent franz-go producer, so exporterhelper's
// retry and persistent sending_queue never lose a batch and never duplicate a record within one attempt.
package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"
