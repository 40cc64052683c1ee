// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectorextension

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
)

var leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

func testElector(t *testing.T) *elector {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.LeaseName, cfg.LeaseNamespace = "otelcol-policy", "observability"
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 2*time.Second, time.Second, 50*time.Millisecond
	require.NoError(t, cfg.Validate())
	return newElector(cfg, extensiontest.NewNopSettings(metadata.Type))
}

// leaseServer is an API server serving Leases, which $KUBECONFIG names for the electors of the test.
func leaseServer(t *testing.T) *fakeapiserver.Server {
	t.Helper()
	srv := fakeapiserver.Start(t)
	srv.Serve(leasesGVR, "Lease", true)
	t.Setenv("KUBECONFIG", srv.Kubeconfig(t))
	return srv
}

// callbackLog records a replica's callbacks as they happen.
type callbackLog struct {
	name   string
	events chan string
}

func (l callbackLog) register(e *elector) {
	e.SetCallBackFuncs(func(context.Context) { l.events <- l.name + " leads" }, func() { l.events <- l.name + " stops" })
}

func next(t *testing.T, events chan string) string {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no leadership change")
		return ""
	}
}

func TestOneLeaderAtATimeAndHandoverOnShutdown(t *testing.T) {
	srv := leaseServer(t)
	events := make(chan string, 10)
	a, b := testElector(t), testElector(t)
	callbackLog{"a", events}.register(a)
	callbackLog{"b", events}.register(b)

	require.NoError(t, a.Start(context.Background(), statustest.NewHost(nil)))
	assert.Equal(t, "a leads", next(t, events))
	lease := srv.Get(leasesGVR, "observability", "otelcol-policy")
	require.NotNil(t, lease, "the leader holds a Lease")
	assert.Equal(t, a.identity, lease["spec"].(map[string]any)["holderIdentity"])

	require.NoError(t, b.Start(context.Background(), statustest.NewHost(nil)))
	// b asks for the lease, finds it held, and keeps following while a renews it several times.
	from := srv.LastSeq()
	for range 3 {
		got := srv.WaitRequest(t, func(r fakeapiserver.Request) bool {
			return r.Seq > from && r.Verb == "update" && r.GVR == leasesGVR && r.Status == http.StatusOK
		})
		from = got.Seq
	}
	assert.Empty(t, events, "b leads while a holds the lease")
	assert.Equal(t, a.identity, srv.Get(leasesGVR, "observability", "otelcol-policy")["spec"].(map[string]any)["holderIdentity"])

	// a shuts down: it releases the lease and stops its work, and b takes the lease. (client-go releases the
	// lease before it runs the stop callbacks, so the two may come in either order.)
	require.NoError(t, a.Shutdown(context.Background()))
	assert.ElementsMatch(t, []string{"a stops", "b leads"}, []string{next(t, events), next(t, events)})
	assert.Equal(t, b.identity, srv.Get(leasesGVR, "observability", "otelcol-policy")["spec"].(map[string]any)["holderIdentity"])

	// A component that registers while b leads starts at once.
	late := make(chan context.Context, 1)
	b.SetCallBackFuncs(func(ctx context.Context) { late <- ctx }, func() {})
	select {
	case ctx := <-late:
		require.NoError(t, b.Shutdown(context.Background()))
		assert.Equal(t, "b stops", next(t, events))
		<-ctx.Done() // the leading context ends with the leadership
	case <-time.After(30 * time.Second):
		t.Fatal("a callback registered while leading did not start")
	}
}

func TestLosingTheLeaseStopsTheWork(t *testing.T) {
	srv := leaseServer(t)
	events := make(chan string, 10)
	a := testElector(t)
	callbackLog{"a", events}.register(a)
	require.NoError(t, a.Start(context.Background(), statustest.NewHost(nil)))
	t.Cleanup(func() { require.NoError(t, a.Shutdown(context.Background())) })
	assert.Equal(t, "a leads", next(t, events))

	// The API server refuses the renewals (RBAC changed): a steps down once its renew deadline passes, and
	// competes again when it may.
	srv.Deny(leasesGVR, "update")
	assert.Equal(t, "a stops", next(t, events))
	srv.Allow(leasesGVR)
	assert.Equal(t, "a leads", next(t, events))
}

func TestNoClusterIsARecoverableStatus(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	a := testElector(t)
	host := statustest.NewHost(nil)
	require.NoError(t, a.Start(context.Background(), host), "no cluster does not fail the collector")
	require.Eventually(t, func() bool {
		ev := host.Last()
		return ev != nil && ev.Status() == componentstatus.StatusRecoverableError
	}, 30*time.Second, 10*time.Millisecond)
	assert.Contains(t, host.Last().Err().Error(), "kubernetes client configuration")
	require.NoError(t, a.Shutdown(context.Background()))
}

// The callbacks run one at a time, starts in the order of registration and stops in reverse, after the starts:
// the collector registers downstream components first, so what a receiver emits always finds them leading.
func TestCallbacksRunInOrderStopsInReverse(t *testing.T) {
	leaseServer(t)
	events := make(chan string, 10)
	a := testElector(t)
	for _, name := range []string{"exporter", "processor", "receiver"} {
		callbackLog{name, events}.register(a)
	}
	require.NoError(t, a.Start(context.Background(), statustest.NewHost(nil)))
	for _, want := range []string{"exporter leads", "processor leads", "receiver leads"} {
		assert.Equal(t, want, next(t, events))
	}

	// Components registering while leading start after one another too: the second waits for the first, which
	// here waits for the test.
	release := make(chan struct{})
	a.SetCallBackFuncs(func(context.Context) { <-release; events <- "late processor leads" }, func() { events <- "late processor stops" })
	callbackLog{"late receiver", events}.register(a)
	close(release)
	assert.Equal(t, "late processor leads", next(t, events))
	assert.Equal(t, "late receiver leads", next(t, events))

	require.NoError(t, a.Shutdown(context.Background()))
	for _, want := range []string{"late receiver stops", "late processor stops", "receiver stops", "processor stops", "exporter stops"} {
		assert.Equal(t, want, next(t, events))
	}
}
