// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadatatest"
	"github.com/otelcol-policy/otelcol-policy/internal/resultsserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// TestIntegration runs the exporter, as its factory builds it, against the reference server over real gRPC,
// with each database the server supports.
func TestIntegration(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			newDB := b.start(t)
			for _, tt := range []struct {
				name string
				test func(t *testing.T, dsn string)
			}{
				{"Forward", testForward},
				{"TLS", testTLS},
				{"MutualTLS", testMutualTLS},
				{"Token", testToken},
				{"PartialRejection", testPartialRejection},
				{"RetryResendsOnlyUnsent", testRetryResendsOnlyUnsent},
				{"Throttle", testThrottle},
				{"ServerRestart", testServerRestart},
				{"Status", testStatus},
			} {
				t.Run(tt.name, func(t *testing.T) { tt.test(t, newDB(t)) })
			}
		})
	}
}

// testConfig is a plain-text exporter without queue or retry, whose ConsumeLogs returns what the server did.
func testConfig(endpoint string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = endpoint
	cfg.ClientConfig.TLS.Insecure = true
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	cfg.TimeoutConfig.Timeout = 10 * time.Second
	return cfg
}

type testExporter struct {
	exporter.Logs
	tel  *componenttest.Telemetry
	logs *observer.ObservedLogs
}

func newTestExporter(t *testing.T, cfg *Config, host component.Host) *testExporter {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.InfoLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, exp.Start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return &testExporter{Logs: exp, tel: tel, logs: logs}
}

// counts sums one of the exporter's own self-metrics' data points by the value of attribute attr.
func (e *testExporter) counts(t *testing.T, name, attr string) map[string]int64 {
	return e.sumBy("otelcol_exporter_results_grpc_"+name, attr)
}

// sent is exporterhelper's count of the records the exporter delivered.
func (e *testExporter) sent() int64 {
	return e.sumBy("otelcol_exporter_sent_log_records", "exporter")[metadata.Type.String()]
}

func (e *testExporter) sumBy(metric, attr string) map[string]int64 {
	out := map[string]int64{}
	m, err := e.tel.GetMetric(metric)
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(attr))
		out[v.AsString()] += dp.Value
	}
	return out
}

// expectedFailing is what the fleet view shows of result i of round 0.
func expectedFailing(i int) resultsserver.FailingResult {
	r := testResult(i, 0)
	return resultsserver.FailingResult{
		Key: r.Key(), ID: r.ID(), Cluster: testCluster, Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Category: "Best Practices", Severity: "medium", Outcome: "fail", Scored: r.Scored,
		Message:  "label 'team' is required (round 0)",
		Resource: resultsserver.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d", i), UID: fmt.Sprintf("uid-%d", i)},
		Report:   resultsserver.Report{Kind: "PolicyReport", Namespace: "shop", Name: fmt.Sprintf("uid-%d", i)},
		State:    "new", Timestamp: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
		ObservedTimestamp: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC),
	}
}

// failingByKey is the fleet view's failing results by key, with UpdatedAt (the server's clock) cleared and
// times in UTC.
func failingByKey(v resultsserver.FleetView) map[string]resultsserver.FailingResult {
	out := make(map[string]resultsserver.FailingResult, len(v.Failing))
	for _, f := range v.Failing {
		f.UpdatedAt = time.Time{}
		f.Timestamp, f.ObservedTimestamp = f.Timestamp.UTC(), f.ObservedTimestamp.UTC()
		out[f.Key] = f
	}
	return out
}

func testForward(t *testing.T, dsn string) {
	srv := startServer(t, dsn)
	cfg := testConfig(srv.addr)
	extra := map[string]string{"environment": "production", "region": "eu-west-1"}
	cfg.ExtraMetadata = extra
	exp := newTestExporter(t, cfg, nil)

	// 2,500 results in requests of at most 1,000, and a decision, which is skipped.
	ld := results(0, 2500, 0)
	appendDecision(ld, "d-1")
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, int64(3), srv.calls.Load())

	v := srv.fleet()
	assert.Equal(t, []resultsserver.ClusterCounts{{Cluster: testCluster, Counts: resultsserver.Counts{Fail: 2500, Total: 2500}}}, v.Clusters)
	got := failingByKey(v)
	require.Len(t, got, 2500)
	for i := range 2500 {
		want := expectedFailing(i)
		require.Equal(t, want, got[want.Key], "result %d", i)
	}
	assert.Equal(t, extra, srv.result(expectedFailing(0).Key).ExtraMetadata, "extra_metadata is stored with the results")

	// A new outcome of 100 results, forwarded twice: the second time stores nothing.
	for range 2 {
		require.NoError(t, exp.ConsumeLogs(context.Background(), results(0, 100, 1)))
	}
	v = srv.fleet()
	assert.Equal(t, []resultsserver.ClusterCounts{{Cluster: testCluster, Counts: resultsserver.Counts{Pass: 100, Fail: 2400, Total: 2500}}}, v.Clusters)
	rows, ids := history(t, dsn)
	assert.Equal(t, 2600, rows)
	assert.Equal(t, 2600, ids)

	assert.Equal(t, map[string]int64{"accepted": 2700, "skipped": 1}, exp.counts(t, "results", "outcome"))
	assert.Equal(t, map[string]int64{"OK": 5}, exp.counts(t, "requests", "code"))
	assert.Empty(t, exp.counts(t, "rejections", "reason"))
	assert.Equal(t, 1, exp.logs.FilterMessageSnippet("Skipping records that are not policy.result records").Len())
}

func testTLS(t *testing.T, dsn string) {
	p := newPKI(t)
	srv := startServer(t, dsn, withTLS(p.serverTLS(false)))

	cfg := testConfig(srv.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.caFile
	require.NoError(t, newTestExporter(t, cfg, nil).ConsumeLogs(context.Background(), results(0, 10, 0)))
	assert.Len(t, srv.fleet().Failing, 10)

	// A server whose certificate the client cannot verify is retried: the error is gRPC's UNAVAILABLE.
	cfg = testConfig(srv.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.otherCAFile
	exp := newTestExporter(t, cfg, nil)
	err := exp.ConsumeLogs(context.Background(), results(10, 10, 0))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.ErrorContains(t, err, "x509: certificate signed by unknown authority")
	assert.Equal(t, map[string]int64{"Unavailable": 1}, exp.counts(t, "requests", "code"))
	assert.Len(t, srv.fleet().Failing, 10)
}

func testMutualTLS(t *testing.T, dsn string) {
	p := newPKI(t)
	srv := startServer(t, dsn, withTLS(p.serverTLS(true)))

	cfg := testConfig(srv.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.caFile
	cfg.ClientConfig.TLS.CertFile = p.clientCert
	cfg.ClientConfig.TLS.KeyFile = p.clientKey
	require.NoError(t, newTestExporter(t, cfg, nil).ConsumeLogs(context.Background(), results(0, 10, 0)))
	assert.Len(t, srv.fleet().Failing, 10)

	// Without a client certificate, or with one the server does not trust, the handshake fails, which gRPC
	// reports as UNAVAILABLE: retried, as a certificate that is being rotated becomes valid without a
	// restart, and the queue keeps the results meanwhile. With TLS 1.3 the client learns of the refusal after
	// its side of the handshake: the error holds the server's alert ("tls: certificate required") or, when the
	// server closed the connection first, a broken pipe or reset.
	for _, tt := range []struct{ name, cert, key string }{
		{name: "no client certificate"},
		{name: "untrusted client certificate", cert: p.otherClient, key: p.otherClientK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(srv.addr)
			cfg.ClientConfig.TLS.Insecure = false
			cfg.ClientConfig.TLS.CAFile = p.caFile
			cfg.ClientConfig.TLS.CertFile, cfg.ClientConfig.TLS.KeyFile = tt.cert, tt.key
			exp := newTestExporter(t, cfg, nil)
			err := exp.ConsumeLogs(context.Background(), results(10, 10, 0))
			require.Error(t, err)
			assert.False(t, consumererror.IsPermanent(err), "%v", err)
			assert.ErrorContains(t, err, "results not forwarded yet: rpc error: code = Unavailable desc = ")
			assert.Equal(t, map[string]int64{"Unavailable": 1}, exp.counts(t, "requests", "code"))
			assert.Len(t, srv.fleet().Failing, 10)
		})
	}
}

// tokenHost is a collector host holding one bearertokenauth extension.
type tokenHost struct {
	component.Host
	ext component.Component
}

var bearerAuthID = component.MustNewID("bearertokenauth")

func (h tokenHost) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{bearerAuthID: h.ext}
}

func newTokenHost(t *testing.T, token string) tokenHost {
	f := bearertokenauthextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*bearertokenauthextension.Config)
	cfg.BearerToken = configopaque.String(token)
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return tokenHost{Host: componenttest.NewNopHost(), ext: ext}
}

func testToken(t *testing.T, dsn string) {
	const right, wrong = "right-token-0123456789abcdef-01234", "wrong-token-9876543210fedcba-43210"
	p := newPKI(t)
	// bearertokenauth sends its token only over TLS.
	srv := startServer(t, dsn, withTLS(p.serverTLS(false)), withTokens(right))
	config := func(header string) *Config {
		cfg := testConfig(srv.addr)
		cfg.ClientConfig.TLS.Insecure = false
		cfg.ClientConfig.TLS.CAFile = p.caFile
		// Retries would be quick: a permanent error must not be retried at all.
		cfg.RetryConfig.Enabled = true
		cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
		cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
		cfg.RetryConfig.MaxElapsedTime = 2 * time.Second
		if header != "" {
			cfg.ClientConfig.Headers.Set("authorization", configopaque.String(header))
		}
		return cfg
	}
	withAuth := func(cfg *Config) *Config {
		cfg.ClientConfig.Auth = configoptional.Some(configauth.Config{AuthenticatorID: bearerAuthID})
		return cfg
	}

	stored := 0
	for _, tt := range []struct {
		name string
		cfg  *Config
		host component.Host
	}{
		{"header", config("Bearer " + right), nil},
		{"bearertokenauth", withAuth(config("")), newTokenHost(t, right)},
	} {
		t.Run(tt.name+"/right token", func(t *testing.T) {
			before := srv.calls.Load()
			require.NoError(t, newTestExporter(t, tt.cfg, tt.host).ConsumeLogs(context.Background(), results(stored, 10, 0)))
			stored += 10
			assert.Len(t, srv.fleet().Failing, stored)
			assert.Equal(t, int64(1), srv.calls.Load()-before)
		})
	}

	for _, tt := range []struct {
		name string
		cfg  *Config
		host component.Host
	}{
		{"header", config("Bearer " + wrong), nil},
		{"bearertokenauth", withAuth(config("")), newTokenHost(t, wrong)},
		{"no token", config(""), nil},
	} {
		t.Run(tt.name+"/wrong token", func(t *testing.T) {
			before := srv.attempts()
			exp := newTestExporter(t, tt.cfg, tt.host)
			err := exp.ConsumeLogs(context.Background(), results(100, 10, 0))
			require.Error(t, err)
			assert.True(t, consumererror.IsPermanent(err))
			assert.EqualError(t, err, "not retryable error: Permanent error: "+srv.addr+": 10 of 10 results dropped: "+
				"the server refused the credentials: check headers::authorization or the auth extension's token: "+
				"rpc error: code = Unauthenticated desc = missing or invalid bearer token")
			assert.NotContains(t, err.Error(), "token-")
			assert.Equal(t, int64(1), srv.attempts()-before, "one attempt, no retry")
			assert.Equal(t, map[string]int64{"Unauthenticated": 1}, exp.counts(t, "requests", "code"))
			assert.Len(t, srv.fleet().Failing, stored)
		})
	}
}

func testPartialRejection(t *testing.T, dsn string) {
	srv := startServer(t, dsn)
	exp := newTestExporter(t, testConfig(srv.addr), nil)

	ld := results(0, 4, 0)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	// A processor rewrote an identity attribute without recomputing the key: the exporter's conversion
	// refuses it before sending.
	tampered := testResult(4, 0)
	policyresult.WriteLogRecord(&tampered, lrs.AppendEmpty())
	lrs.At(4).Attributes().PutStr(policyresult.AttrPolicy, "renamed")
	// A text field with a NUL, which the server refuses (PostgreSQL cannot store it).
	nul := testResult(5, 0)
	nul.Message = "bad\x00message"
	policyresult.WriteLogRecord(&nul, lrs.AppendEmpty())
	// A result without a cluster, with no k8s.cluster.name in extra_metadata either: the server refuses it.
	noCluster := testResult(6, 0)
	noCluster.Cluster = ""
	policyresult.WriteLogRecord(&noCluster, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())

	require.NoError(t, exp.ConsumeLogs(context.Background(), ld), "rejected results are not retried")
	got := failingByKey(srv.fleet())
	require.Len(t, got, 4)
	for i := range 4 {
		want := expectedFailing(i)
		assert.Equal(t, want, got[want.Key])
	}
	assert.Equal(t, map[string]int64{"accepted": 4, "rejected": 2, "invalid": 1}, exp.counts(t, "results", "outcome"))
	assert.Equal(t, map[string]int64{"missing_field": 1, "other": 1}, exp.counts(t, "rejections", "reason"))

	rejections := exp.logs.FilterMessage("The results server rejected a result; it is dropped").AllUntimed()
	require.Len(t, rejections, 2)
	assert.Equal(t, map[string]any{"id": nul.ID(), "reason": "a text field contains a NUL character", "key": nul.Key(),
		"source": "kyverno", "policy": "require-labels", "rule": "check-team"}, rejections[0].ContextMap())
	assert.Equal(t, zapcore.WarnLevel, rejections[0].Level)
	assert.Equal(t, map[string]any{"id": noCluster.ID(), "key": noCluster.Key(),
		"reason": "cluster is missing: set it on the result or as k8s.cluster.name in extra_metadata",
		"source": "kyverno", "policy": "require-labels", "rule": "check-team"}, rejections[1].ContextMap())
	invalid := exp.logs.FilterMessage("Dropping policy.result records that cannot be forwarded").AllUntimed()
	require.Len(t, invalid, 1)
	renamed := tampered
	renamed.Policy = "renamed"
	assert.Equal(t, map[string]any{"dropped_records": int64(1),
		"first_error": "attribute policy.result.key is " + tampered.Key() + " but the identity attributes give " + renamed.Key()},
		invalid[0].ContextMap())

	// Many rejections: the first ten are logged one by one, the rest in one line.
	ld = plog.NewLogs()
	lrs = ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := range 25 {
		r := testResult(100+i, 0)
		r.Cluster = ""
		policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
	}
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, 12, exp.logs.FilterMessage("The results server rejected a result; it is dropped").Len())
	more := exp.logs.FilterMessage("The results server rejected more results of the request; they are dropped").AllUntimed()
	require.Len(t, more, 1)
	assert.Equal(t, map[string]any{"not_logged": int64(15), "rejected": int64(25), "results": int64(25)}, more[0].ContextMap())
	assert.Equal(t, map[string]int64{"missing_field": 26, "other": 1}, exp.counts(t, "rejections", "reason"))
}

// faults fails chosen Forward calls (counted from 1) with a chosen status, and records the size of every
// request, inside the real server's interceptor chain.
type faults struct {
	mu    sync.Mutex
	fail  map[int]*status.Status
	sizes []int
}

func (f *faults) interceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	f.mu.Lock()
	f.sizes = append(f.sizes, len(req.(*pb.ForwardRequest).GetResults()))
	st := f.fail[len(f.sizes)]
	f.mu.Unlock()
	if st != nil {
		return nil, st.Err()
	}
	return h(ctx, req)
}

func (f *faults) requestSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sizes)
}

func testRetryResendsOnlyUnsent(t *testing.T, dsn string) {
	f := &faults{fail: map[int]*status.Status{2: status.New(codes.Unavailable, "restarting")}}
	srv := startServer(t, dsn, withServerOptions(grpc.ChainUnaryInterceptor(f.interceptor)))

	// Without retry, the error hands back the records of the failed request and the next ones only.
	ld := results(0, 2500, 0)
	appendDecision(ld, "d-1")
	exp := newTestExporter(t, testConfig(srv.addr), nil)
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.EqualError(t, err, srv.addr+": 1500 of 2500 results not forwarded yet: rpc error: code = Unavailable desc = restarting")
	logsErr, ok := errors.AsType[consumererror.Logs](err)
	require.True(t, ok)
	require.Equal(t, 1500, logsErr.Data().LogRecordCount())
	first := logsErr.Data().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	key, _ := first.Attributes().Get(policyresult.AttrResultKey)
	r1000 := testResult(1000, 0)
	assert.Equal(t, r1000.Key(), key.Str())
	assert.Equal(t, []int{1000, 1000}, f.requestSizes())
	assert.Len(t, srv.fleet().Failing, 1000)

	// With retry, exporterhelper resends them: every result is stored once, the decision skipped once.
	f.mu.Lock()
	f.sizes, f.fail = nil, map[int]*status.Status{2: status.New(codes.Unavailable, "restarting")}
	f.mu.Unlock()
	cfg := testConfig(srv.addr)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	exp = newTestExporter(t, cfg, nil)
	ld = results(2500, 2500, 0)
	appendDecision(ld, "d-2")
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, []int{1000, 1000, 1000, 500}, f.requestSizes())
	assert.Len(t, srv.fleet().Failing, 3500, "the 1,500 of the first batch were never resent")
	assert.Equal(t, map[string]int64{"accepted": 2500, "skipped": 1}, exp.counts(t, "results", "outcome"))
	assert.Equal(t, map[string]int64{"OK": 3, "Unavailable": 1}, exp.counts(t, "requests", "code"))
	rows, ids := history(t, dsn)
	assert.Equal(t, 3500, rows)
	assert.Equal(t, 3500, ids)
}

func testThrottle(t *testing.T, dsn string) {
	st, err := status.New(codes.ResourceExhausted, "busy").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(700 * time.Millisecond)})
	require.NoError(t, err)
	var mu sync.Mutex
	var times []time.Time
	f := &faults{fail: map[int]*status.Status{1: st}}
	timing := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		return f.interceptor(ctx, req, info, h)
	}
	srv := startServer(t, dsn, withServerOptions(grpc.ChainUnaryInterceptor(timing)))
	cfg := testConfig(srv.addr)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	require.NoError(t, newTestExporter(t, cfg, nil).ConsumeLogs(context.Background(), results(0, 10, 0)))
	require.Len(t, times, 2)
	assert.GreaterOrEqual(t, times[1].Sub(times[0]), 700*time.Millisecond, "the server's RetryInfo sets the delay")
	assert.Len(t, srv.fleet().Failing, 10)
}

// testServerRestart streams rounds of new outcomes through a persistent sending queue while the server
// stops until the exporter retries, and comes back on the same port and database: every result ends with its
// latest outcome, every outcome is in the history once.
func testServerRestart(t *testing.T, dsn string) {
	const keys, rounds, perBatch = 300, 8, 100
	srv := startServer(t, dsn)
	host := filestoragetest.NewHost(t, t.TempDir())
	t.Cleanup(func() { require.NoError(t, host.Ext.Shutdown(context.Background())) })
	cfg := testConfig(srv.addr)
	cfg.MaxResultsPerRequest = 40
	cfg.TimeoutConfig.Timeout = 2 * time.Second
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 200 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 0
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.StorageID = &filestoragetest.ID
	cfg.QueueConfig = configoptional.Some(queue)
	exp := newTestExporter(t, cfg, host)

	retries := func() int {
		return exp.logs.FilterMessage("Exporting failed. Will retry the request after interval.").Len()
	}
	batches, retriedBefore := 0, 0
	for round := range rounds {
		for first := 0; first < keys; first += perBatch {
			require.NoError(t, exp.ConsumeLogs(context.Background(), results(first, perBatch, round)))
			batches++
			switch batches {
			case 6:
				// The server stops once it has what was queued so far; the next batches wait in the queue.
				require.Eventually(t, func() bool { return exp.sent() == int64(batches*perBatch) }, 30*time.Second,
					10*time.Millisecond, "%d of %d results sent", exp.sent(), batches*perBatch)
				retriedBefore = retries()
				srv.stop()
			case 16:
				// It comes back once the exporter has found it gone with each of the batches queued meanwhile (one
				// retry a batch) and retries them from the queue.
				require.Eventually(t, func() bool { return retries() >= retriedBefore+10 }, 30*time.Second, 10*time.Millisecond)
				srv.restart()
			}
		}
	}

	// The last round's outcome is pass, and its id is the current one of every key.
	want := make(map[string]string, keys)
	for i := range keys {
		r := testResult(i, rounds-1)
		want[r.Key()] = r.ID()
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rows, ids := history(t, dsn)
		assert.Equal(c, keys*rounds, rows)
		assert.Equal(c, keys*rounds, ids)
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, []resultsserver.ClusterCounts{{Cluster: testCluster, Counts: resultsserver.Counts{Pass: keys, Total: keys}}}, srv.fleet().Clusters)
	assert.Equal(t, want, currentIDs(t, dsn))

	codes := exp.counts(t, "requests", "code")
	assert.Positive(t, codes["Unavailable"], "requests failed while the server was down: %v", codes)
	// Every result was accepted once, and more only when a request was stored but its answer lost.
	assert.GreaterOrEqual(t, exp.counts(t, "results", "outcome")["accepted"], int64(keys*rounds))
	t.Logf("requests by code: %v; results: %v", codes, exp.counts(t, "results", "outcome"))
}

// testStatus: the exporter reports a recoverable error status for each failed Forward call and OK at the first
// call that succeeds after them, for status watchers such as k8s_events.
func testStatus(t *testing.T, dsn string) {
	srv := startServer(t, dsn)
	host := statustest.NewHost(nil)
	exp := newTestExporter(t, testConfig(srv.addr), host)
	require.NoError(t, exp.ConsumeLogs(context.Background(), results(0, 3, 0)))
	assert.Nil(t, host.Last(), "a healthy exporter reports nothing")

	srv.stop()
	for range 2 {
		require.Error(t, exp.ConsumeLogs(context.Background(), results(3, 3, 0)))
		ev := host.Next(t)
		assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
		assert.ErrorContains(t, ev.Err(), srv.addr+": rpc error: code = Unavailable")
		assert.NotContains(t, ev.Err().Error(), "results not forwarded", "the same failure reads the same each time")
	}

	// gRPC reconnects after its backoff: calls fail until then, each reported.
	srv.restart()
	require.Eventually(t, func() bool { return exp.ConsumeLogs(context.Background(), results(3, 3, 0)) == nil },
		30*time.Second, 50*time.Millisecond)
	ok := host.Last()
	assert.Equal(t, componentstatus.StatusOK, ok.Status())
	require.NoError(t, exp.ConsumeLogs(context.Background(), results(6, 3, 0)))
	assert.Same(t, ok, host.Last(), "OK once, not at every call")
}
