// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// TestStoredStateOfFirstVersionLoads stores the index and group entry the first version wrote (testdata/v1-*,
// made outside Go from the format's specification) and checks that they load, and that a record of one of the
// stored results updates that result rather than counting it again: the stored keys are the records' keys.
func TestStoredStateOfFirstVersionLoads(t *testing.T) {
	ctx := context.Background()
	index, err := os.ReadFile(filepath.Join("testdata", "v1-index.json"))
	require.NoError(t, err)
	group, err := os.ReadFile(filepath.Join("testdata", "v1-group.bin"))
	require.NoError(t, err)
	client := openStorage(t, t.TempDir())
	const groupKey = "9590abd8e87d75db23af390e937b59a4"
	require.NoError(t, client.Set(ctx, "policy_aggregate/v1/index", index))
	require.NoError(t, client.Set(ctx, "policy_aggregate/v1/group/"+groupKey, group))

	tl := New(names, 100)
	require.NoError(t, NewStore(client, "policy_aggregate").Load(ctx, tl))
	require.Equal(t, 1, tl.Groups())
	assert.Equal(t, 2, tl.Len())
	var g *Group
	tl.All(func(x *Group) { g = x })
	assert.Equal(t, []string{"kyverno", "require-labels"}, g.Values)
	assert.Equal(t, groupKey, g.Key)
	assert.Equal(t, policyresult.Counts{Pass: 1, Fail: 1, Total: 2}, g.Counts)
	assert.Equal(t, g.Counts, g.Emitted)

	// The stored failing result passes now.
	r := policyresult.Result{Cluster: "c1", Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Outcome: policyresult.OutcomePass, State: policyresult.StateChanged,
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-1", UID: "uid-cart-1"},
		Report:   policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: "r1"}}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), r.Cluster)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	policyresult.WriteLogRecord(&r, lr)
	_, err = tl.Apply(rl.Resource().Attributes(), lr, make([]string, len(names)))
	require.NoError(t, err)
	assert.Equal(t, 2, tl.Len(), "the record updates its stored key")
	assert.Equal(t, policyresult.Counts{Pass: 2, Total: 2}, g.Counts)
}
