// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpctest // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
)

// BearerAuthID is the bearertokenauth extension of a TokenHost.
var BearerAuthID = component.MustNewID("bearertokenauth")

// TokenHost is a collector host holding one bearertokenauth extension.
type TokenHost struct {
	component.Host
	ext component.Component
}

// GetExtensions returns the bearertokenauth extension.
func (h TokenHost) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{BearerAuthID: h.ext}
}

// NewTokenHost starts a bearertokenauth extension sending token, shut down when the test ends.
func NewTokenHost(t testing.TB, token string) TokenHost {
	f := bearertokenauthextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*bearertokenauthextension.Config)
	cfg.BearerToken = configopaque.String(token)
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return TokenHost{Host: componenttest.NewNopHost(), ext: ext}
}

// WithBearerAuth makes cfg authenticate with the extension of a TokenHost.
func WithBearerAuth(cfg *resultsgrpcexporter.Config) *resultsgrpcexporter.Config {
	cfg.ClientConfig.Auth = configoptional.Some(configauth.Config{AuthenticatorID: BearerAuthID})
	return cfg
}
