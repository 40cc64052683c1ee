// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import "sync/atomic"

// rejectKind is the reason label of results_server_results_rejected_total: what kind of check a rejected
// result failed (the rejection itself says exactly why).
type rejectKind int

const (
	// rejectInvalid: the result itself (toRow's checks).
	rejectInvalid rejectKind = iota
	rejectMetadataTooLarge
	rejectBodyTooLarge
	rejectBodyTooDeep
	rejectFieldTooLarge
	rejectClusterDenied
	rejectClusterQuota
	rejectKeyQuota
	numRejectKinds
)

func (k rejectKind) String() string {
	return [...]string{"invalid", "metadata_too_large", "body_too_large", "body_too_deep", "field_too_large", "cluster_not_allowed",
		"cluster_quota", "key_quota"}[k]
}

// ingestMetrics count what the ingest checks refused or changed.
type ingestMetrics struct {
	rejected [numRejectKinds]atomic.Uint64
	// clampedTimes counts results whose time was beyond the clock skew, ordered by their arrival instead.
	clampedTimes atomic.Uint64
}

func (m *ingestMetrics) write(p func(format string, a ...any)) {
	p("# HELP results_server_results_rejected_total Forwarded results rejected, by the kind of check they failed.\n")
	p("# TYPE results_server_results_rejected_total counter\n")
	for k := range numRejectKinds {
		p("results_server_results_rejected_total{reason=%q} %d\n", k, m.rejected[k].Load())
	}
	p("# HELP results_server_future_times_total Forwarded results whose time was further ahead of the server's clock than the allowed skew, ordered by their arrival instead.\n")
	p("# TYPE results_server_future_times_total counter\n")
	p("results_server_future_times_total %d\n", m.clampedTimes.Load())
}
