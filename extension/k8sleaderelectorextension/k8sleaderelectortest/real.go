// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectortest // import "github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/k8sleaderelectortest"

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
)

// Real is the k8s_leader_elector itself, competing for a Lease of the API server that $KUBECONFIG names, with
// durations short enough for tests. It tells the test when the components registered before its Start lead.
type Real struct {
	k8sleaderelectorextension.LeaderElection
	once    sync.Once
	leading chan struct{}
}

// NewReal returns an elector for lease in namespace; the test starts it after the components that use it, and
// shuts it down.
func NewReal(t testing.TB, namespace, lease string) *Real {
	t.Helper()
	f := k8sleaderelectorextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*k8sleaderelectorextension.Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.LeaseName, cfg.LeaseNamespace = lease, namespace
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 3*time.Second, 2*time.Second, 200*time.Millisecond
	require.NoError(t, cfg.Validate())
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	return &Real{LeaderElection: ext.(k8sleaderelectorextension.LeaderElection), leading: make(chan struct{})}
}

// Start registers a last callback, which the elector runs after those of the components registered before, and
// starts competing.
func (r *Real) Start(ctx context.Context, host component.Host) error {
	r.SetCallBackFuncs(func(context.Context) { r.once.Do(func() { close(r.leading) }) }, func() {})
	return r.LeaderElection.Start(ctx, host)
}

// WaitLeading waits until this replica leads for the first time and its components' start callbacks returned.
func (r *Real) WaitLeading(t testing.TB) {
	t.Helper()
	select {
	case <-r.leading:
	case <-time.After(30 * time.Second):
		t.Fatal("the replica did not start leading")
	}
}
