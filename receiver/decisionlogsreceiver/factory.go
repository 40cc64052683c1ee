// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"time"

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

// The defaults bound what the receiver can hold at once; README.md ("Memory and time bounds") adds them up.

// defaultNDJSON fills the defaults of a listener entry; lists are not merged with a default config.
func defaultNDJSON() NDJSONConfig {
	return NDJSONConfig{
		Transport: "unix", SocketMode: "0660", Format: FormatAuto, MaxLineBytes: 1 << 20,
		// Producers are a few per node or cluster (Gatekeeper's pods, a forwarder); each connection may hold a
		// line up to max_line_bytes and a batch up to max_batch_bytes.
		MaxConnections: 16,
		// Producers write whole lines: a line that takes seconds to arrive is held open on purpose.
		LineTimeout: 10 * time.Second,
		// Long enough for a quiet producer (Gatekeeper audits every minute), short enough that abandoned
		// connections give their place back.
		IdleTimeout:      time.Hour,
		HandshakeTimeout: 10 * time.Second,
		// A producer that connects before it has anything to say (a forwarder started before its source) keeps
		// its place for a minute; one that has sent a line is trusted with idle_timeout. Under pressure a silent
		// connection gives way to a new one sooner (max_connections).
		FirstLineTimeout: time.Minute,
		// Over tcp: a node's producers connect from their own pod IPs; one address takes at most half the places
		// before it has sent a line.
		MaxSilentConnectionsPerSource: 8,
	}
}

// defaultOPA is what `opa:` alone configures.
func defaultOPA() OPAConfig {
	sc := confighttp.NewDefaultServerConfig()
	// Not 8181: that is OPA's own port, and OPA often runs beside the collector.
	sc.NetAddr.Endpoint = "127.0.0.1:8182"
	// Decompressed. OPA uploads chunks of upload_size_limit_bytes (32 KiB) of gzip, about 1 MiB of JSON.
	sc.MaxRequestBodySize = 8 << 20
	// OPA waits 10 s for an answer (response_header_timeout_seconds) and uploads 32 KiB: a body that takes
	// longer than this is trickled, and would hold one of the few upload turns.
	sc.ReadHeaderTimeout = 10 * time.Second
	sc.ReadTimeout = 15 * time.Second
	// OPA connects to upload and sends its request at once.
	return OPAConfig{ServerConfig: sc, Path: "/logs", MaxEventsPerRequest: 10000, MaxConcurrentRequests: 2,
		MaxConnections: defaultOPAMaxConnections, FirstRequestTimeout: 10 * time.Second,
		MaxSilentConnectionsPerSource: defaultOPAMaxConnections / 4}
}

// defaultOPAMaxConnections: OPA keeps one connection to its service, so a node's OPAs need a few; a connection
// costs some tens of KiB (a goroutine and its buffers) until read_header_timeout or the idle timeout closes it.
const defaultOPAMaxConnections = 256

// defaultGatekeeperExport is what `gatekeeper_export:` configures besides its path.
func defaultGatekeeperExport() GatekeeperExportConfig {
	// Gatekeeper audits every 60 s by default and rotates admission segments at least every minute: a few
	// seconds add little to that, and listing a directory that often costs nothing.
	return GatekeeperExportConfig{PollInterval: 5 * time.Second, MaxLineBytes: 1 << 20}
}

func createDefaultConfig() component.Config {
	return &Config{
		OPA:                  configoptional.Default(defaultOPA()),
		GatekeeperExport:     configoptional.Default(defaultGatekeeperExport()),
		MaxInputBytes:        64 << 10,
		MaxBatchRecords:      1000,
		MaxBatchBytes:        4 << 20,
		MaxConcurrentBatches: 2,
		// 1,000² steps take about a millisecond; real events have maps of a few dozen members.
		MaxObjectMembers: 1000,
	}
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newReceiver(cfg.(*Config), set, next)
}
