// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
)

// TestOPAEndpointWithBearerTokenAuth: the endpoint authenticates through the bearertokenauth extension, as
// configured with `auth: {authenticator: bearertokenauth}`.
func TestOPAEndpointWithBearerTokenAuth(t *testing.T) {
	cfg := opaConfig(t)
	tr := startReceiverWithBearerAuth(t, cfg, "s3cret-token")
	sink := tr.sink
	url := "http://" + cfg.OPA.Get().ServerConfig.NetAddr.Endpoint + "/logs"

	send := func(token string) int {
		req, err := http.NewRequest(http.MethodPost, url, stringsReader("["+opaEvent("auth-1", true)+"]"))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, send(""))
	assert.Equal(t, http.StatusUnauthorized, send("wrong"))
	assert.Zero(t, sink.LogRecordCount(), "nothing from unauthenticated clients")
	assert.Equal(t, http.StatusOK, send("s3cret-token"))
	require.Eventually(t, func() bool { return sink.LogRecordCount() == 1 }, 5*time.Second, 20*time.Millisecond)
}

// startReceiverWithBearerAuth starts the receiver of cfg with its OPA endpoint behind the bearertokenauth
// extension, which accepts token.
func startReceiverWithBearerAuth(t *testing.T, cfg *Config, token string) *testReceiver {
	t.Helper()
	f := bearertokenauthextension.NewFactory()
	acfg := f.CreateDefaultConfig().(*bearertokenauthextension.Config)
	acfg.BearerToken = configopaque.String(token)
	authID := component.MustNewID("bearertokenauth")
	auth, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), acfg)
	require.NoError(t, err)
	require.NoError(t, auth.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, auth.Shutdown(context.Background())) })

	cfg.OPA.Get().ServerConfig.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
	return startReceiverOn(t, cfg, statustest.NewHost(map[component.ID]component.Component{authID: auth}))
}
