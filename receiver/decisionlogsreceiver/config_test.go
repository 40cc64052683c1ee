// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	opaOnly := createDefaultConfig().(*Config)
	opaOnly.OPA = configoptional.Some(defaultOPA())

	full := createDefaultConfig().(*Config)
	full.ClusterName, full.IncludeInput, full.MaxInputBytes, full.MaxBatchRecords = "prod-eu-1", true, 4096, 200
	full.MaxBatchBytes, full.MaxConcurrentBatches, full.MaxObjectMembers = 8<<20, 4, 5000
	unix := defaultNDJSON()
	unix.Endpoint, unix.SocketMode, unix.Format = "/var/run/otelcol-policy/decisions.sock", "0600", FormatGatekeeper
	tcp := defaultNDJSON()
	tcp.Transport, tcp.Endpoint, tcp.Format, tcp.MaxLineBytes = "tcp", "127.0.0.1:9464", FormatGeneric, 65536
	tcp.MaxConnections, tcp.LineTimeout, tcp.IdleTimeout, tcp.HandshakeTimeout = 64, 30*time.Second, time.Hour, 5*time.Second
	tcp.FirstLineTimeout, tcp.MaxSilentConnectionsPerSource = 20*time.Second, 8
	full.NDJSON = []NDJSONConfig{unix, tcp}
	full.Generic = GenericMapping{ID: "event.id", Policy: "rule.name", Allowed: "verdict", Message: "reason", Source: "my-engine"}
	opa := defaultOPA()
	opa.ServerConfig.NetAddr.Endpoint = "0.0.0.0:8181"
	opa.Path = "/opa/logs"
	opa.ServerConfig.MaxRequestBodySize = 1 << 20
	opa.MaxEventsPerRequest, opa.MaxConcurrentRequests, opa.MaxConnections, opa.ServerConfig.ReadTimeout = 2000, 4, 32, 30*time.Second
	opa.FirstRequestTimeout, opa.MaxSilentConnectionsPerSource = 5*time.Second, 16
	opa.ServerConfig.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: component.MustNewID("bearertokenauth")}})
	full.OPA = configoptional.Some(opa)
	gk := defaultGatekeeperExport()
	gk.Path, gk.PollInterval, gk.AuditChanges, gk.MaxLineBytes = "/tmp/violations/topics", 2*time.Second, true, 65536
	full.GatekeeperExport = configoptional.Some(gk)
	storage := component.MustNewIDWithName("file_storage", "decisions")
	full.Storage = &storage

	gkOnly := createDefaultConfig().(*Config)
	gkDefaults := defaultGatekeeperExport()
	gkDefaults.Path = "/tmp/violations/topics"
	gkOnly.GatekeeperExport = configoptional.Some(gkDefaults)

	for _, tt := range []struct {
		name    string
		want    *Config
		wantErr []string
	}{
		{name: "", want: opaOnly},
		{name: "full", want: full},
		{name: "gatekeeper_export", want: gkOnly},
		{name: "nothing", wantErr: []string{"configure at least one input: an ndjson listener, the opa endpoint or gatekeeper_export"}},
		{name: "bad_gatekeeper_export", wantErr: []string{
			"gatekeeper_export::path must be set",
			"gatekeeper_export::poll_interval must not be negative, got -1s",
			"gatekeeper_export::max_line_bytes must be at least 1024, got 10",
		}},
		{name: "storage_without_export", wantErr: []string{"storage is used by gatekeeper_export only, which is not configured"}},
		{name: "bad_listener", wantErr: []string{
			`ndjson[0] (udp:): transport must be unix or tcp, got "udp"`,
			"ndjson[0] (udp:): endpoint must be set",
			`ndjson[0] (udp:): format must be auto, opa, gatekeeper or generic, got "xml"`,
			"ndjson[0] (udp:): max_line_bytes must be at least 1024, got 10",
			`ndjson[1] (unix:/tmp/x.sock): socket_mode must be octal permission bits such as "0660", got "rw"`,
			"ndjson[1] (unix:/tmp/x.sock): max_connections must not be negative, got -1",
			"ndjson[1] (unix:/tmp/x.sock): line_timeout must not be negative, got -1s",
			"ndjson[1] (unix:/tmp/x.sock): idle_timeout must not be negative, got -1s",
			"ndjson[1] (unix:/tmp/x.sock): handshake_timeout must not be negative, got -1s",
			"ndjson[1] (unix:/tmp/x.sock): first_line_timeout must not be negative, got -1s",
			"ndjson[1] (unix:/tmp/x.sock): max_silent_connections_per_source must not be negative, got -1",
			"max_batch_records must be positive, got 0",
			"max_input_bytes must not be negative, got -1",
			"max_batch_bytes must be at least 65536, got 1000",
			"max_concurrent_batches must not be negative, got -1",
			"max_object_members must not be negative, got -1",
		}},
		{name: "bad_path", wantErr: []string{`opa::path must start with /, got "logs"`}},
		{name: "bad_opa_limits", wantErr: []string{
			"opa::max_events_per_request must not be negative, got -1",
			"opa::max_concurrent_requests must not be negative, got -1",
			"opa::max_connections must not be negative, got -1",
			"opa::first_request_timeout must not be negative, got -1s",
			"opa::max_silent_connections_per_source must not be negative, got -1",
			"opa::read_timeout must not be negative, got -1s",
			"opa::max_request_body_size must not be negative, got -1",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			for _, w := range tt.wantErr {
				assert.ErrorContains(t, err, w)
			}
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, cfg)
			}
		})
	}
}

// TestUnsetLimitsRunWithTheirDefaults: a configuration built in code, which leaves the limits at zero, runs with
// the defaults rather than with no limits.
func TestUnsetLimitsRunWithTheirDefaults(t *testing.T) {
	sc := confighttp.NewDefaultServerConfig()
	sc.NetAddr.Endpoint = "127.0.0.1:0"
	cfg := &Config{
		NDJSON:          []NDJSONConfig{{Transport: "tcp", Endpoint: "127.0.0.1:0", Format: FormatAuto, MaxLineBytes: 4096}},
		OPA:             configoptional.Some(OPAConfig{ServerConfig: sc, Path: "/logs"}),
		MaxBatchRecords: 100,
	}
	require.NoError(t, cfg.Validate())
	run := cfg.withDefaults()

	l, d := run.NDJSON[0], defaultNDJSON()
	assert.Equal(t, 4096, l.MaxLineBytes, "set values are kept")
	assert.Equal(t, d.MaxConnections, l.MaxConnections)
	assert.Equal(t, d.LineTimeout, l.LineTimeout)
	assert.Equal(t, d.IdleTimeout, l.IdleTimeout)
	assert.Equal(t, d.HandshakeTimeout, l.HandshakeTimeout)
	assert.Equal(t, d.FirstLineTimeout, l.FirstLineTimeout)
	assert.Equal(t, d.MaxSilentConnectionsPerSource, l.MaxSilentConnectionsPerSource)
	o, do := run.OPA.Get(), defaultOPA()
	assert.Equal(t, do.MaxEventsPerRequest, o.MaxEventsPerRequest)
	assert.Equal(t, do.MaxConcurrentRequests, o.MaxConcurrentRequests)
	assert.Equal(t, do.MaxConnections, o.MaxConnections)
	assert.Equal(t, do.FirstRequestTimeout, o.FirstRequestTimeout)
	assert.Equal(t, do.MaxSilentConnectionsPerSource, o.MaxSilentConnectionsPerSource)
	assert.Equal(t, do.ServerConfig.ReadTimeout, o.ServerConfig.ReadTimeout)
	assert.Equal(t, do.ServerConfig.MaxRequestBodySize, o.ServerConfig.MaxRequestBodySize)
	dc := createDefaultConfig().(*Config)
	assert.Equal(t, dc.MaxBatchBytes, run.MaxBatchBytes)
	assert.Equal(t, dc.MaxConcurrentBatches, run.MaxConcurrentBatches)
	assert.Equal(t, dc.MaxObjectMembers, run.MaxObjectMembers)
	assert.Zero(t, cfg.NDJSON[0].MaxConnections, "the configuration itself is left alone")
}
