// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package collectortest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"

import (
	"fmt"
	"os"
	"testing"
)

// ReplicaOverlay is what a test changes in the shipped StatefulSet's collector config
// (distributions/otelcol-policy/kubernetes/deployment) to run it outside a Pod as one replica of several.
type ReplicaOverlay struct {
	Health, Metrics int // the health check's and the self-metrics' ports
	// PolicyMetrics is the port of policy_metrics' series (the prometheus exporter); 0 picks a free one, for a
	// test that does not scrape them.
	PolicyMetrics int
	// Shared is the state directory every replica mounts (the ReadWriteMany volume), Queue the replica's own
	// (its volumeClaimTemplate's claim).
	Shared, Queue string
	// Lease names the Lease the replicas compete for; "" keeps the config's.
	Lease string
}

// Write writes the overlay to path. Besides the ports and the volumes' paths, the API server comes from
// $KUBECONFIG (there is no in-cluster token), a follower takes over from a dead leader after 6 s rather than
// 15, and the summaries and gauges go out every second rather than every 30: the tests wait for both.
func (o ReplicaOverlay) Write(t testing.TB, path string) {
	t.Helper()
	if o.PolicyMetrics == 0 {
		o.PolicyMetrics = FreePort(t)
	}
	lease := ""
	if o.Lease != "" {
		lease = ", lease_name: " + o.Lease
	}
	cfg := fmt.Sprintf(`extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
  k8s_leader_elector: {auth_type: kubeConfig, lease_duration: 6s, renew_deadline: 4s, retry_period: 1s%s}
  k8s_events: {auth_type: kubeConfig}
  file_storage/shared: {directory: %s}
  file_storage/queue: {directory: %s}
receivers:
  k8s_reports: {auth_type: kubeConfig}
processors:
  policy_aggregate: {interval: 1s}
connectors:
  policy_metrics: {interval: 1s}
exporters:
  prometheus: {endpoint: "127.0.0.1:%d"}
service:
  telemetry:
%s`, o.Health, lease, o.Shared, o.Queue, o.PolicyMetrics, MetricsTelemetry(o.Metrics))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}
