// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package policyaggregateprocessor keeps the latest outcome of every policy result and emits, per group of
// results (by default one policy in one namespace of one cluster), a policy.summary record with the counts by
// outcome whenever they changed.
package policyaggregateprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor"
