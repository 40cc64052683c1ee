// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/opatest"
)

// evaluate asks OPA for n decisions (every third denied) and returns their decision ids.
func evaluate(t *testing.T, opa *opatest.Server, n int) []string {
	ids := make([]string, 0, n)
	for i := range n {
		user := "alice"
		if i%3 == 0 {
			user = "mallory"
		}
		id, err := opa.Decide(user, i)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func TestRealOPADecisionLogsArriveExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real OPA server")
	}
	cfg := opaConfig(t)
	tr := startReceiver(t, cfg)
	opa := opatest.Start(t, "http://"+cfg.OPA.Get().ServerConfig.NetAddr.Endpoint, opatest.Options{})

	// The pipeline refuses until OPA has uploaded its chunks again: OPA keeps them and retries.
	tr.sink.refusing.Store(true)
	const n = 60
	ids := evaluate(t, opa, n)
	require.Eventually(t, func() bool { return tr.sink.refused.Load() >= 1 }, 15*time.Second, 50*time.Millisecond)
	first := tr.sink.refused.Load()
	require.Eventually(t, func() bool { return tr.sink.refused.Load() > first }, 30*time.Second, 50*time.Millisecond,
		"OPA uploads a refused chunk again")
	tr.sink.refusing.Store(false)

	got := tr.waitDecisions(n, 60*time.Second)
	gotIDs := make([]string, 0, n)
	denied := 0
	for _, d := range got {
		gotIDs = append(gotIDs, d.ID)
		assert.Equal(t, "opa", d.Source)
		assert.Equal(t, "example/allow", d.Policy)
		require.NotNil(t, d.Allowed)
		if !*d.Allowed {
			denied++
		}
		assert.False(t, d.Timestamp.IsZero(), "OPA's timestamp")
	}
	sort.Strings(ids)
	sort.Strings(gotIDs)
	assert.Equal(t, ids, gotIDs, "the same decision ids, each once")
	assert.Equal(t, n/3, denied, "every third request was denied")
}
