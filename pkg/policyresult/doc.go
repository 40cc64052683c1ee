// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package policyresult is the result model shared by every otelcol-policy component: the attribute names, the
// result and severity vocabularies, the stable result hashes, and the conversion of a result to and from an OTLP
// log record. Components never spell an attribute name themselves; they use the constants and helpers here, so
// that every receiver writes, and every processor and exporter reads, the same record shape.
//
// docs/semantic-conventions.md documents every name defined here.
package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
