// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
)

func TestForbiddenResourceDoesNotStopTheOthers(t *testing.T) {
	srv := startFakeServer(t)
	srv.Deny(vulnReportGVR)
	srv.ApplyYAML(t, policyReportGVR, fmt.Sprintf(podReport, "visible", "fail"))
	srv.ApplyYAML(t, vulnReportGVR, vulnReport)
	tr := startOnFake(t, srv, fakeConfig(), "", nil)

	for _, r := range tr.waitRecords(3) {
		assert.Equal(t, "kyverno", r.Source)
	}
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusRecoverableError }, waitFor, tick)
	assert.Contains(t, tr.host.Last().Err().Error(), "list vulnerabilityreports.aquasecurity.github.io")
	assert.Contains(t, tr.host.Last().Err().Error(), "forbidden")
	assert.Positive(t, errorCount(tr, "vulnerability_reports", "forbidden"))

	// Granting the right heals the receiver without a restart.
	srv.Allow(vulnReportGVR)
	recs := tr.waitRecords(1)
	assert.Equal(t, "trivy-operator", recs[0].Source)
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusOK }, waitFor, tick)
}

func TestDiscoveryFollowsResourcesBeingServed(t *testing.T) {
	srv := fakeapiserver.Start(t)
	cfg := fakeConfig()
	cfg.Kinds = KindsConfig{OpenReports: true}
	tr := startOnFake(t, srv, cfg, "", nil)
	// Discovery answered that the kind is not served: nothing can be watched, so nothing arrives.
	tr.waitLog(msgKindNotServed)
	tr.quietAfter()
	assert.NotEqual(t, componentstatus.StatusRecoverableError, lastStatus(tr), "a kind not served is no fault")

	// The CRD is installed: the next discovery finds it.
	srv.Serve(openReportGVR, "Report", true)
	srv.ApplyYAML(t, openReportGVR, openReport)
	assert.Equal(t, []string{
		"new kube-bench-adapter 1.2.1/anonymous-auth Node//node-1 -> fail",
		"new custom-check 1.2.2/ Node//node-1 -> pass",
	}, summaries(tr.waitRecords(2)))

	// The CRD is deleted: its reports are resolved, and the watcher stops without a fault.
	srv.Unserve(openReportGVR)
	assert.Equal(t, []string{
		"resolved kube-bench-adapter 1.2.1/anonymous-auth Node//node-1 -> fail",
		"resolved custom-check 1.2.2/ Node//node-1 -> pass",
	}, summaries(tr.waitRecords(2)))
	tr.waitLog("Report resource no longer served; its reports are resolved")
	require.Eventually(t, func() bool { return lastStatus(tr) != componentstatus.StatusRecoverableError }, waitFor, tick)
}

func TestDiscoveryFailureKeepsTheWatchers(t *testing.T) {
	srv := startFakeServer(t)
	tr := startOnFake(t, srv, fakeConfig(), "", nil)
	srv.ApplyYAML(t, policyReportGVR, fmt.Sprintf(podReport, "cart", "fail"))
	tr.waitRecords(3)

	// The aggregated API of one group fails to answer discovery: its watchers go on.
	srv.FailDiscovery(vulnReportGVR.GroupVersion())
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusRecoverableError }, waitFor, tick)
	assert.Positive(t, errorCount(tr, "", "unavailable"))
	srv.ApplyYAML(t, vulnReportGVR, vulnReport)
	assert.Equal(t, "trivy-operator", tr.waitRecords(1)[0].Source)
}
