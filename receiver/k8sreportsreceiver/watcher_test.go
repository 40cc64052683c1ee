// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func applyPodReports(t *testing.T, srv *fakeapiserver.Server, outcome string, names ...string) {
	t.Helper()
	for _, name := range names {
		srv.ApplyYAML(t, policyReportGVR, fmt.Sprintf(podReport, name, outcome))
	}
}

func statuses(reqs []fakeapiserver.Request) []int {
	out := make([]int, len(reqs))
	for i, r := range reqs {
		out[i] = r.Status
	}
	return out
}

func TestListReadsEveryPageThenWatchesFromItsVersion(t *testing.T) {
	srv := startFakeServer(t)
	applyPodReports(t, srv, "fail", "r0", "r1", "r2", "r3", "r4")
	cfg := fakeConfig()
	cfg.PageSize = 2
	tr := startOnFake(t, srv, cfg, "", nil)

	recs := tr.waitRecords(15)
	perReport := map[string]int{}
	for _, r := range recs {
		assert.Equal(t, policyresult.StateNew, r.State)
		perReport[r.Report.Name]++
	}
	assert.Equal(t, map[string]int{"r0": 3, "r1": 3, "r2": 3, "r3": 3, "r4": 3}, perReport)

	lists := requestsOf(srv, "list", policyReportGVR, 0)
	require.Len(t, lists, 3, "five reports in pages of two")
	assert.Empty(t, lists[0].Query.Get("continue"))
	for _, l := range lists {
		assert.Equal(t, "2", l.Query.Get("limit"))
	}
	assert.NotEmpty(t, lists[1].Query.Get("continue"))
	assert.NotEqual(t, lists[1].Query.Get("continue"), lists[2].Query.Get("continue"))

	w := srv.WaitWatch(t, policyReportGVR, 0)
	assert.Equal(t, "5", w.Query.Get("resourceVersion"), "the watch starts where the list ended")
	assert.Equal(t, "true", w.Query.Get("allowWatchBookmarks"))
}

func TestExpiredContinueTokenRestartsTheList(t *testing.T) {
	srv := startFakeServer(t)
	applyPodReports(t, srv, "fail", "r0", "r1", "r2", "r3", "r4")
	srv.ExpireNextContinue()
	cfg := fakeConfig()
	cfg.PageSize = 2
	tr := startOnFake(t, srv, cfg, "", nil)

	assert.Len(t, tr.waitRecords(15), 15, "each result once, though the list started over")
	lists := requestsOf(srv, "list", policyReportGVR, 0)
	assert.Equal(t, []int{http.StatusOK, http.StatusGone, http.StatusOK, http.StatusOK, http.StatusOK}, statuses(lists))
	assert.Empty(t, lists[2].Query.Get("continue"), "the list starts over")
	assert.NotEqual(t, componentstatus.StatusRecoverableError, lastStatus(tr), "an expired token is no fault")
	assertErrorCount(t, tr, "policy_reports", "list", 0)
}

func TestWatchEventsAndBookmarks(t *testing.T) {
	srv := startFakeServer(t)
	tr := startOnFake(t, srv, fakeConfig(), "", nil)
	srv.WaitWatch(t, policyReportGVR, 0)

	applyPodReports(t, srv, "fail", "cart")
	assert.Equal(t, []string{
		"new kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> fail",
		"new kyverno require-labels/check-team Pod/shop/cart-7d9f -> fail",
		"new kyverno require-labels/check-team Pod/shop/cart-8e0a -> fail",
	}, summaries(tr.waitRecords(3)))

	applyPodReports(t, srv, "pass", "cart")
	assert.Equal(t, []string{"changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass"},
		summaries(tr.waitRecords(1)))

	// Another resource moves the server's resource version on; only a bookmark tells the policyreports
	// watcher, which then resumes from it rather than from its last event.
	srv.ApplyYAML(t, clusterPolicyReportGVR, fmt.Sprintf(clusterReport, "cis-a", 1))
	tr.waitRecords(1)
	rv := srv.Bookmark(policyReportGVR)
	tr.quietAfter(seenVersion{policyReportGVR, rv})
	before := srv.LastSeq()
	srv.EndWatches(policyReportGVR)
	w := srv.WaitWatch(t, policyReportGVR, before)
	assert.Equal(t, rv, w.Query.Get("resourceVersion"), "the watch resumes from the bookmark")
	assert.Empty(t, requestsOf(srv, "list", policyReportGVR, before), "a watch that ends is resumed, not relisted")

	srv.Delete(policyReportGVR, "shop", "cart")
	assert.Equal(t, []string{
		"resolved kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		"resolved kyverno require-labels/check-team Pod/shop/cart-7d9f -> fail",
		"resolved kyverno require-labels/check-team Pod/shop/cart-8e0a -> fail",
	}, summaries(tr.waitRecords(3)))
}

func TestRelistAfterGone(t *testing.T) {
	srv := startFakeServer(t)
	applyPodReports(t, srv, "fail", "keep", "gone")
	tr := startOnFake(t, srv, fakeConfig(), "", nil)
	tr.waitRecords(6)
	srv.WaitWatch(t, policyReportGVR, 0)

	// The watch breaks and cannot resume: while the watcher is refused, one report is deleted and one
	// changes, and their events are compacted away.
	srv.Deny(policyReportGVR, "watch")
	before := srv.LastSeq()
	srv.EndWatches(policyReportGVR)
	srv.WaitRequest(t, func(r fakeapiserver.Request) bool {
		return r.Seq > before && r.Verb == "watch" && r.GVR == policyReportGVR && r.Status == http.StatusForbidden
	})
	srv.Delete(policyReportGVR, "shop", "gone")
	applyPodReports(t, srv, "pass", "keep")
	srv.Compact()
	before = srv.LastSeq()
	srv.Allow(policyReportGVR)

	// The watch from the old version gets 410 Gone; the list that follows finds both changes.
	recs := tr.waitRecords(4)
	assert.Equal(t, []string{
		"changed kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> pass",
		"resolved kyverno disallow-privileged/privileged-containers Pod/shop/cart-7d9f -> fail",
		"resolved kyverno require-labels/check-team Pod/shop/cart-7d9f -> fail",
		"resolved kyverno require-labels/check-team Pod/shop/cart-8e0a -> fail",
	}, summaries(recs))
	assert.Equal(t, "keep", recs[0].Report.Name)
	for _, r := range recs[1:] {
		assert.Equal(t, "gone", r.Report.Name)
	}
	assert.NotEmpty(t, requestsOf(srv, "list", policyReportGVR, before), "relisted")
	require.Eventually(t, func() bool { return lastStatus(tr) == componentstatus.StatusOK }, waitFor, tick)
}

func TestMalformedObjectIsSkippedAndCounted(t *testing.T) {
	srv := startFakeServer(t)
	tr := startOnFake(t, srv, fakeConfig(), "", nil)
	rv := srv.ApplyYAML(t, policyReportGVR, `
apiVersion: wgpolicyk8s.io/v1alpha2
kind: PolicyReport
metadata: {name: broken, namespace: shop}
results: {not: a list}
`)
	tr.quietAfter(seenVersion{policyReportGVR, rv})
	assertErrorCount(t, tr, "policy_reports", "malformed", 1)
	applyPodReports(t, srv, "fail", "fine")
	assert.Len(t, tr.waitRecords(3), 3, "the next report is read")
}

func TestNamespaceFilterAppliesToWatchedObjects(t *testing.T) {
	srv := startFakeServer(t)
	cfg := fakeConfig()
	cfg.Namespaces.Exclude = []string{"shop"}
	tr := startOnFake(t, srv, cfg, "", nil)
	rv := srv.ApplyYAML(t, policyReportGVR, fmt.Sprintf(podReport, "excluded", "fail"))
	tr.quietAfter(seenVersion{policyReportGVR, rv})
	srv.ApplyYAML(t, clusterPolicyReportGVR, fmt.Sprintf(clusterReport, "cis-a", 1))
	recs := tr.waitRecords(1)
	assert.Equal(t, "cis-a", recs[0].Report.Name, "cluster-scoped reports are not filtered by namespace")
}
