// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package k8sleaderelectortest runs the handover tests of components that follow a k8s_leader_elector with both
// kinds of elector: the test's own (internal/testutil/leadertest), which switches leadership on cue, and the
// real extension competing for a Lease of a kube-apiserver.
package k8sleaderelectortest // import "github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension/k8sleaderelectortest"

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/leadertest"
)

// Pair is the electors of two replicas, A and B, for tests of a handover: the components of each replica find
// theirs on their host, A leads first, then hands over to B.
type Pair struct {
	A, B k8sleaderelectorextension.LeaderElection
	// LeadA makes A the leader and returns once its components lead; B then follows.
	LeadA func(t testing.TB)
	// HandOver stops A's leadership and returns once B's components lead.
	HandOver func(t testing.TB)
}

// NewPair is a Pair of the test's electors: leadership changes when the test says.
func NewPair(*testing.T) Pair {
	a, b := leadertest.New(), leadertest.New()
	return Pair{
		A: a, B: b,
		LeadA: func(testing.TB) { a.Lead() },
		HandOver: func(testing.TB) {
			a.StopLeading()
			b.Lead()
		},
	}
}

// Pairs are the pairs a handover test runs with: its own electors, and real ones on a kube-apiserver.
var Pairs = map[string]func(*testing.T) Pair{
	"test elector":            NewPair,
	"lease on kube-apiserver": NewPairOnAPIServer,
}

// NewPairOnAPIServer is a Pair of real electors competing for a Lease of a kube-apiserver of their own (skipped
// under -short). The handover is a rolling update's: A shuts down, releasing the lease, and B takes it.
func NewPairOnAPIServer(t *testing.T) Pair {
	t.Helper()
	cluster := apiserver.StartForTest(t)
	t.Setenv("KUBECONFIG", cluster.Kubeconfig(t, apiserver.AdminToken))
	a, b := NewReal(t, "default", "handover"), NewReal(t, "default", "handover")
	t.Cleanup(func() {
		require.NoError(t, a.Shutdown(context.Background()))
		require.NoError(t, b.Shutdown(context.Background()))
	})
	host := componenttest.NewNopHost()
	return Pair{
		A: a, B: b,
		LeadA: func(t testing.TB) {
			require.NoError(t, a.Start(context.Background(), host))
			a.WaitLeading(t)
			require.NoError(t, b.Start(context.Background(), host))
		},
		HandOver: func(t testing.TB) {
			require.NoError(t, a.Shutdown(context.Background()))
			b.WaitLeading(t)
		},
	}
}
