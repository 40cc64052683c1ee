// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
}

// The default configuration listens nowhere: which sources to accept is the operator's choice.
func TestCreateDefaultConfigNeedsASource(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.EqualError(t, cfg.Validate(), "configure at least one input: an ndjson listener, the opa endpoint or gatekeeper_export")

	// `opa:` alone is a whole configuration, beside OPA rather than on its port.
	opa := cfg.OPA.GetOrInsertDefault()
	assert.Equal(t, "127.0.0.1:8182", opa.ServerConfig.NetAddr.Endpoint)
	assert.Equal(t, "/logs", opa.Path)
	assert.NoError(t, cfg.Validate())
}

func TestCreateLogs(t *testing.T) {
	f := NewFactory()
	set := receivertest.NewNopSettings(metadata.Type)
	r, err := f.CreateLogs(context.Background(), set, f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, r.Shutdown(context.Background()))

	cfg := f.CreateDefaultConfig().(*Config)
	cfg.OPA.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = "127.0.0.1:0"
	r, err = f.CreateLogs(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()), "the OPA endpoint listens")
	require.NoError(t, r.Shutdown(context.Background()))
}

func TestCreateLogsFailsToStartOnATakenEndpoint(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.OPA.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = taken.Addr().String()
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err, "nothing is bound before Start")
	assert.ErrorContains(t, r.Start(context.Background(), componenttest.NewNopHost()), "address already in use")
	require.NoError(t, r.Shutdown(context.Background()))
}
