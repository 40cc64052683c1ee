// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package hostile

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDaemonSetOPAEndpointIsClosed: the DaemonSet's OPA endpoint, which listens on every address of the node,
// refuses uploads without its bearer token (so a pod that reaches it can neither forge decisions nor make it
// decode anything), and delivers those with it.
func TestDaemonSetOPAEndpointIsClosed(t *testing.T) {
	tg := StartDaemonSet(t, "")
	ctx := context.Background()
	body := gzipped(opaUpload([]string{"forged-1", "forged-2"}))

	token := tg.Token
	for _, bad := range []string{"", "wrong-token"} {
		tg.Token = bad
		code, err := tg.PostOPA(ctx, body, true)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, code, "token %q", bad)
	}
	tg.Token = token
	code, err := tg.PostOPA(ctx, gzipped(opaUpload([]string{"real-1"})), true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	tg.WaitDecisions([]string{"real-1"}, 30*time.Second)
	assert.NotContains(t, tg.Decisions(), "forged-1", "nothing of a refused upload is delivered")
	tg.Alive()
}
