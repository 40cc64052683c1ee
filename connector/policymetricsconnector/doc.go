// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package policymetricsconnector turns policy result and decision records into metrics: gauges of the current
// results by outcome and sums of decisions, with label sets chosen in configuration so that users control the
// cardinality.
package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"
