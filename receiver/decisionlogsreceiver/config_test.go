package decisionlogsreceiver

import (
	"path/filepath"
	"testing"

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
	unix := defaultNDJSON()
	unix.Endpoint, unix.SocketMode, unix.Format = "/var/run/otelcol-policy/decisions.sock", "0600", FormatGatekeeper
	tcp := defaultNDJSON()
	tcp.Transport, tcp.Endpoint, tcp.Format, tcp.MaxLineBytes = "tcp", "127.0.0.1:9464", FormatGeneric, 65536
	full.NDJSON = []NDJSONConfig{unix, tcp}
	full.Generic = GenericMapping{ID: "event.id", Policy: "rule.name", Allowed: "verdict", Message: "reason", Source: "my-engine"}
	opa := defaultOPA()
	opa.ServerConfig.NetAddr.Endpoint = "0.0.0.0:8181"
	opa.Path = "/opa/logs"
	opa.ServerConfig.MaxRequestBodySize = 1 << 20
	opa.ServerConfig.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: component.MustNewID("bearertokenauth")}})
	full.OPA = configoptional.Some(opa)

	for _, tt := range []struct {
		name    string
		want    *Config
		wantErr []string
	}{
		{name: "", want: opaOnly},
		{name: "full", want: full},
		{name: "nothing", wantErr: []string{"configure at least one ndjson listener or the opa endpoint"}},
		{name: "bad_listener", wantErr: []string{
			`ndjson[0] (udp:): transport must be unix or tcp, got "udp"`,
			"ndjson[0] (udp:): endpoint must be set",
			`ndjson[0] (udp:): format must be auto, opa, gatekeeper or generic, got "xml"`,
			"ndjson[0] (udp:): max_line_bytes must be at least 1024, got 10",
			`ndjson[1] (unix:/tmp/x.sock): socket_mode must be octal permission bits such as "0660", got "rw"`,
			"max_batch_records must be positive, got 0",
			"max_input_bytes must not be negative, got -1",
		}},
		{name: "bad_path", wantErr: []string{`opa::path must start with /, got "logs"`}},
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
