// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package resultsgrpcexporter forwards policy results to a server of the results forwarding API
// (proto/policyresults/v1, ResultForwarder.Forward) over gRPC, such as results-server/. Every policy.result
// record becomes one Result; other records (decisions, summaries) are skipped. Batches are split into requests
// of at most max_results_per_request results, and a retry resends only the requests that did not succeed;
// the server stores results idempotently by id, so a resend after a lost answer or a restart stores nothing
// twice.
package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
