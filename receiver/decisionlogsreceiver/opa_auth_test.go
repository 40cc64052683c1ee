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

	"github.com/otelcol-policy/otelcol-policy/internal/statustest"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadatatest"
)

// TestOPAEndpointWithBearerTokenAuth: the endpoint authenticates through the bearertokenauth extension, as
// configured with `auth: {authenticator: bearertokenauth}`.
func TestOPAEndpointWithBearerTokenAuth(t *testing.T) {
	f := bearertokenauthextension.NewFactory()
	acfg := f.CreateDefaultConfig().(*bearertokenauthextension.Config)
	acfg.BearerToken = configopaque.String("s3cret-token")
	authID := component.MustNewID("bearertokenauth")
	auth, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), acfg)
	require.NoError(t, err)
	require.NoError(t, auth.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, auth.Shutdown(context.Background())) }()

	cfg := opaConfig(t)
	cfg.OPA.Get().ServerConfig.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
	sink := &refusingSink{}
	rcv, err := newReceiver(cfg, metadatatest.NewSettings(componenttest.NewTelemetry()), sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), statustest.NewHost(map[component.ID]component.Component{authID: auth})))
	defer func() {
		require.NoError(t, rcv.Shutdown(context.Background()))
		http.DefaultClient.CloseIdleConnections()
	}()
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
