// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package resultsgrpctest runs the results_grpc exporter in tests as its factory builds it, with its
// self-metrics and log at hand, and builds the batches of results the tests send. The exporter's own tests
// (against an in-test ResultForwarder) and the testbed's tests against the real results server share it.
package resultsgrpctest // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
)

// Config is a plain-text exporter to endpoint without queue or retry, whose ConsumeLogs returns what the server
// did.
func Config(endpoint string) *resultsgrpcexporter.Config {
	cfg := resultsgrpcexporter.NewFactory().CreateDefaultConfig().(*resultsgrpcexporter.Config)
	cfg.ClientConfig.Endpoint = endpoint
	cfg.ClientConfig.TLS.Insecure = true
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	cfg.TimeoutConfig.Timeout = 10 * time.Second
	return cfg
}

// Exporter is a started results_grpc exporter, shut down when the test ends.
type Exporter struct {
	exporter.Logs
	Tel *componenttest.Telemetry
	// Log is what it logged at info level and above.
	Log *observer.ObservedLogs
}

// Start creates the exporter of cfg with the factory and starts it on host (a nop host when nil).
func Start(t testing.TB, cfg *resultsgrpcexporter.Config, host component.Host) *Exporter {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.InfoLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	exp, err := resultsgrpcexporter.NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, exp.Start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return &Exporter{Logs: exp, Tel: tel, Log: logs}
}

// Counts sums one of the exporter's own self-metrics (otelcol_exporter_results_grpc_<name>) by the value of
// attribute attr.
func (e *Exporter) Counts(name, attr string) map[string]int64 {
	return e.sumBy("otelcol_exporter_results_grpc_"+name, attr)
}

// Sent is exporterhelper's count of the records the exporter delivered.
func (e *Exporter) Sent() int64 {
	return e.sumBy("otelcol_exporter_sent_log_records", "exporter")[metadata.Type.String()]
}

func (e *Exporter) sumBy(metric, attr string) map[string]int64 {
	out := map[string]int64{}
	m, err := e.Tel.GetMetric(metric)
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(attr))
		out[v.AsString()] += dp.Value
	}
	return out
}

// Server is a results server a test can stop and start again on the same address.
type Server interface {
	Addr() string
	// Stop stops it at once, as a crash would.
	Stop()
	// Restart serves again on the same address, with what it stored.
	Restart()
}

// CheckStatus runs the exporter of cfg on a host that records statuses against srv, which stops and comes back:
// nothing while healthy, a recoverable error for each failed Forward call, then OK once at the first call that
// succeeds after them, for status watchers such as k8s_events. Results 0 to 8 of round 0 are sent.
func CheckStatus(t *testing.T, srv Server, cfg *resultsgrpcexporter.Config) {
	host := statustest.NewHost(nil)
	exp := Start(t, cfg, host)
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(0, 3, 0)))
	assert.Nil(t, host.Last(), "a healthy exporter reports nothing")

	srv.Stop()
	for range 2 {
		require.Error(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(3, 3, 0)))
		ev := host.Next(t)
		assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
		assert.ErrorContains(t, ev.Err(), srv.Addr()+": rpc error: code = Unavailable")
		assert.NotContains(t, ev.Err().Error(), "results not forwarded", "the same failure reads the same each time")
	}

	// gRPC reconnects after its backoff: calls fail until then, each reported.
	srv.Restart()
	require.Eventually(t, func() bool { return exp.ConsumeLogs(context.Background(), resultbatch.Logs(3, 3, 0)) == nil },
		30*time.Second, 50*time.Millisecond)
	ok := host.Last()
	assert.Equal(t, componentstatus.StatusOK, ok.Status())
	require.NoError(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(6, 3, 0)))
	assert.Same(t, ok, host.Last(), "OK once, not at every call")
}
