package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadata"
)

// NewFactory creates the factory of the decision_logs receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig,
		receiver.WithLogs(createLogs, metadata.LogsStability))
}

// defaultNDJSON fills the defaults of a listener entry; lists are not merged with a default config.
func defaultNDJSON() NDJSONConfig {
	return NDJSONConfig{Transport: "unix", SocketMode: "0660", Format: FormatAuto, MaxLineBytes: 1 << 20}
}

// defaultOPA is what `opa:` alone configures.
func defaultOPA() OPAConfig {
	sc := confighttp.NewDefaultServerConfig()
	// Not 8181: that is OPA's own port, and OPA often runs beside the collector.
	sc.NetAddr.Endpoint = "127.0.0.1:8182"
	sc.MaxRequestBodySize = 32 << 20
	return OPAConfig{ServerConfig: sc, Path: "/logs"}
}

func createDefaultConfig() component.Config {
	return &Config{
		OPA:             configoptional.Default(defaultOPA()),
		MaxInputBytes:   64 << 10,
		MaxBatchRecords: 1000,
	}
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newReceiver(cfg.(*Config), set, next)
}
