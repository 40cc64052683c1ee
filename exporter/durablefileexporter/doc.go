// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package durablefileexporter writes log records as OTLP JSON lines to a local file and acknowledges a batch only
// once it is on disk. Unlike the contrib file exporter, whose buffered writer acknowledges before data reaches
// the file and which has no retry or sending queue, it supports exporterhelper's timeout, retry_on_failure and
// sending_queue, so with a file_storage persistent queue a batch survives a failing disk and a restart.
package durablefileexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter"
