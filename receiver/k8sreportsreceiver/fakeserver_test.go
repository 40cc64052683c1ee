// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
)

// fakeRetry keeps the watchers' retries short against the fake API server, where a fault lasts exactly as
// long as the test wants.
var fakeRetry = retryDelays{min: 5 * time.Millisecond, max: 50 * time.Millisecond}

// startFakeServer serves the report resources of policy_reports and vulnerability_reports, as their CRDs in
// testdata/crds define them.
func startFakeServer(t *testing.T) *fakeapiserver.Server {
	srv := fakeapiserver.Start(t)
	srv.Serve(policyReportGVR, "PolicyReport", true)
	srv.Serve(clusterPolicyReportGVR, "ClusterPolicyReport", false)
	srv.Serve(vulnReportGVR, "VulnerabilityReport", true)
	return srv
}

// fakeConfig is the receiver configuration of a unit test: the kinds startFakeServer serves.
func fakeConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.ClusterName = "test-cluster"
	cfg.Kinds = KindsConfig{PolicyReports: true, VulnerabilityReports: true}
	cfg.DiscoveryInterval = time.Second
	return cfg
}

// startOnFake runs a receiver against the fake API server; storageDir, when set, backs a file_storage
// extension, and ext are further extensions of the host.
func startOnFake(t *testing.T, srv *fakeapiserver.Server, cfg *Config, storageDir string, ext map[component.ID]component.Component) *testReceiver {
	t.Helper()
	if ext == nil {
		ext = map[component.ID]component.Component{}
	}
	tr := newTestReceiver(t, cfg, srv.Kubeconfig(t), storageDir, ext, nil)
	tr.rcv.retry = fakeRetry
	tr.start()
	return tr
}

// requestsOf lists the requests of one verb on one resource answered after request number after.
func requestsOf(srv *fakeapiserver.Server, verb string, gvr schema.GroupVersionResource, after int) []fakeapiserver.Request {
	var out []fakeapiserver.Request
	for _, r := range srv.Requests() {
		if r.Seq > after && r.Verb == verb && r.GVR == gvr {
			out = append(out, r)
		}
	}
	return out
}
