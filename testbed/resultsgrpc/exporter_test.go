// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
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

// expectedFailing is what the fleet view shows of result i of round 0.
func expectedFailing(i int) store.FailingResult {
	r := resultbatch.Result(i, 0)
	return store.FailingResult{
		Key: r.Key(), ID: r.ID(), Cluster: resultbatch.Cluster, Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Category: "Best Practices", Severity: "medium", Outcome: "fail", Scored: r.Scored,
		Message:  "label 'team' is required (round 0)",
		Resource: store.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d", i), UID: fmt.Sprintf("uid-%d", i)},
		Report:   store.Report{Kind: "PolicyReport", Namespace: "shop", Name: fmt.Sprintf("uid-%d", i)},
		State:    "new", Timestamp: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
		ObservedTimestamp: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC),
	}
}

// failingByKey is the fleet view's failing results by key, with UpdatedAt (the server's clock) cleared and
// times in UTC.
func failingByKey(v store.FleetView) map[string]store.FailingResult {
	out := make(map[string]store.FailingResult, len(v.Failing))
	for _, f := range v.Failing {
		f.UpdatedAt = time.Time{}
		f.Timestamp, f.ObservedTimestamp = f.Timestamp.UTC(), f.ObservedTimestamp.UTC()
		out[f.Key] = f
	}
	return out
}

func testForward(t *testing.T, dsn string) {
	srv := startServer(t, dsn)
	cfg := resultsgrpctest.Config(srv.addr)
	extra := map[string]string{"environment": "production", "region": "eu-west-1"}
	cfg.ExtraMetadata = extra
	exp := resultsgrpctest.Start(t, cfg, nil)

	// 2,500 results in requests of at most 1,000, and a decision, which is skipped.
	ld := resultbatch.Logs(0, 2500, 0)
	resultbatch.AppendDecision(ld, "d-1")
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, int64(3), srv.calls.Load())

	v := srv.fleet()
	assert.Equal(t, []store.ClusterCounts{{Cluster: resultbatch.Cluster, Counts: store.Counts{Fail: 2500, Total: 2500}}}, v.Clusters)
	got := failingByKey(v)
	require.Len(t, got, 2500)
	for i := range 2500 {
		want := expectedFailing(i)
		require.Equal(t, want, got[want.Key], "result %d", i)
	}
	assert.Equal(t, extra, srv.result(expectedFailing(0).Key).ExtraMetadata, "extra_metadata is stored with the results")

	// A new outcome of 100 results, forwarded twice: the second time stores nothing.
	for range 2 {
		require.NoError(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(0, 100, 1)))
	}
	v = srv.fleet()
	assert.Equal(t, []store.ClusterCounts{{Cluster: resultbatch.Cluster, Counts: store.Counts{Pass: 100, Fail: 2400, Total: 2500}}}, v.Clusters)
	rows, ids := history(t, dsn)
	assert.Equal(t, 2600, rows)
	assert.Equal(t, 2600, ids)

	assert.Equal(t, map[string]int64{"accepted": 2700, "skipped": 1}, exp.Counts("results", "outcome"))
	assert.Equal(t, map[string]int64{"OK": 5}, exp.Counts("requests", "code"))
	assert.Empty(t, exp.Counts("rejections", "reason"))
	assert.Equal(t, 1, exp.Log.FilterMessageSnippet("Skipping records that are not policy.result records").Len())
}

func testTLS(t *testing.T, dsn string) {
	p := resultsgrpctest.NewPKI(t)
	srv := startServer(t, dsn, withTLS(p.ServerTLS(false)))

	cfg := resultsgrpctest.Config(srv.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.CAFile
	require.NoError(t, resultsgrpctest.Start(t, cfg, nil).ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0)))
	assert.Len(t, srv.fleet().Failing, 10)

	// A server whose certificate the client cannot verify is retried: the error is gRPC's UNAVAILABLE.
	cfg = resultsgrpctest.Config(srv.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.OtherCAFile
	exp := resultsgrpctest.Start(t, cfg, nil)
	err := exp.ConsumeLogs(context.Background(), resultbatch.Logs(10, 10, 0))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.ErrorContains(t, err, "x509: certificate signed by unknown authority")
	assert.Equal(t, map[string]int64{"Unavailable": 1}, exp.Counts("requests", "code"))
	assert.Len(t, srv.fleet().Failing, 10)
}

func testMutualTLS(t *testing.T, dsn string) {
	p := resultsgrpctest.NewPKI(t)
	srv := startServer(t, dsn, withTLS(p.ServerTLS(true)))

	cfg := resultsgrpctest.Config(srv.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.CAFile
	cfg.ClientConfig.TLS.CertFile = p.ClientCert
	cfg.ClientConfig.TLS.KeyFile = p.ClientKey
	require.NoError(t, resultsgrpctest.Start(t, cfg, nil).ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0)))
	assert.Len(t, srv.fleet().Failing, 10)

	// Without a client certificate, or with one the server does not trust, the handshake fails, which gRPC
	// reports as UNAVAILABLE: retried, as a certificate that is being rotated becomes valid without a
	// restart, and the queue keeps the results meanwhile. With TLS 1.3 the client learns of the refusal after
	// its side of the handshake: the error holds the server's alert ("tls: certificate required") or, when the
	// server closed the connection first, a broken pipe or reset.
	for _, tt := range []struct{ name, cert, key string }{
		{name: "no client certificate"},
		{name: "untrusted client certificate", cert: p.OtherClient, key: p.OtherClientKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := resultsgrpctest.Config(srv.addr)
			cfg.ClientConfig.TLS.Insecure = false
			cfg.ClientConfig.TLS.CAFile = p.CAFile
			cfg.ClientConfig.TLS.CertFile, cfg.ClientConfig.TLS.KeyFile = tt.cert, tt.key
			exp := resultsgrpctest.Start(t, cfg, nil)
			err := exp.ConsumeLogs(context.Background(), resultbatch.Logs(10, 10, 0))
			require.Error(t, err)
			assert.False(t, consumererror.IsPermanent(err), "%v", err)
			assert.ErrorContains(t, err, "results not forwarded yet: rpc error: code = Unavailable desc = ")
			assert.Equal(t, map[string]int64{"Unavailable": 1}, exp.Counts("requests", "code"))
			assert.Len(t, srv.fleet().Failing, 10)
		})
	}
}

func testToken(t *testing.T, dsn string) {
	const right, wrong = "right-token-0123456789abcdef-01234", "wrong-token-9876543210fedcba-43210"
	p := resultsgrpctest.NewPKI(t)
	// bearertokenauth sends its token only over TLS.
	srv := startServer(t, dsn, withTLS(p.ServerTLS(false)), withTokens(right))
	config := func(header string) *resultsgrpcexporter.Config {
		cfg := resultsgrpctest.Config(srv.addr)
		cfg.ClientConfig.TLS.Insecure = false
		cfg.ClientConfig.TLS.CAFile = p.CAFile
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

	stored := 0
	for _, tt := range []struct {
		name string
		cfg  *resultsgrpcexporter.Config
		host component.Host
	}{
		{"header", config("Bearer " + right), nil},
		{"bearertokenauth", resultsgrpctest.WithBearerAuth(config("")), resultsgrpctest.NewTokenHost(t, right)},
	} {
		t.Run(tt.name+"/right token", func(t *testing.T) {
			before := srv.calls.Load()
			require.NoError(t, resultsgrpctest.Start(t, tt.cfg, tt.host).ConsumeLogs(context.Background(), resultbatch.Logs(stored, 10, 0)))
			stored += 10
			assert.Len(t, srv.fleet().Failing, stored)
			assert.Equal(t, int64(1), srv.calls.Load()-before)
		})
	}

	for _, tt := range []struct {
		name string
		cfg  *resultsgrpcexporter.Config
		host component.Host
	}{
		{"header", config("Bearer " + wrong), nil},
		{"bearertokenauth", resultsgrpctest.WithBearerAuth(config("")), resultsgrpctest.NewTokenHost(t, wrong)},
		{"no token", config(""), nil},
	} {
		t.Run(tt.name+"/wrong token", func(t *testing.T) {
			before := srv.attempts()
			exp := resultsgrpctest.Start(t, tt.cfg, tt.host)
			err := exp.ConsumeLogs(context.Background(), resultbatch.Logs(100, 10, 0))
			require.Error(t, err)
			assert.True(t, consumererror.IsPermanent(err))
			assert.EqualError(t, err, "not retryable error: Permanent error: "+srv.addr+": 10 of 10 results dropped: "+
				"the server refused the credentials: check headers::authorization or the auth extension's token: "+
				"rpc error: code = Unauthenticated desc = missing or invalid bearer token")
			assert.NotContains(t, err.Error(), "token-")
			assert.Equal(t, int64(1), srv.attempts()-before, "one attempt, no retry")
			assert.Equal(t, map[string]int64{"Unauthenticated": 1}, exp.Counts("requests", "code"))
			assert.Len(t, srv.fleet().Failing, stored)
		})
	}
}

func testPartialRejection(t *testing.T, dsn string) {
	srv := startServer(t, dsn)
	exp := resultsgrpctest.Start(t, resultsgrpctest.Config(srv.addr), nil)
	batch := resultsgrpctest.NewRejectable()
	require.NoError(t, exp.ConsumeLogs(context.Background(), batch.Logs), "rejected results are not retried")
	got := failingByKey(srv.fleet())
	require.Len(t, got, 4)
	for i := range 4 {
		want := expectedFailing(i)
		assert.Equal(t, want, got[want.Key])
	}
	batch.CheckRejected(t, exp)
	resultsgrpctest.CheckManyRejectionsLogged(t, exp)
	assert.Equal(t, map[string]int64{"missing_field": 26, "other": 1}, exp.Counts("rejections", "reason"))
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
	ld := resultbatch.Logs(0, 2500, 0)
	resultbatch.AppendDecision(ld, "d-1")
	exp := resultsgrpctest.Start(t, resultsgrpctest.Config(srv.addr), nil)
	err := exp.ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.EqualError(t, err, srv.addr+": 1500 of 2500 results not forwarded yet: rpc error: code = Unavailable desc = restarting")
	logsErr, ok := errors.AsType[consumererror.Logs](err)
	require.True(t, ok)
	require.Equal(t, 1500, logsErr.Data().LogRecordCount())
	first := logsErr.Data().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	key, _ := first.Attributes().Get(policyresult.AttrResultKey)
	r1000 := resultbatch.Result(1000, 0)
	assert.Equal(t, r1000.Key(), key.Str())
	assert.Equal(t, []int{1000, 1000}, f.requestSizes())
	assert.Len(t, srv.fleet().Failing, 1000)

	// With retry, exporterhelper resends them: every result is stored once, the decision skipped once.
	f.mu.Lock()
	f.sizes, f.fail = nil, map[int]*status.Status{2: status.New(codes.Unavailable, "restarting")}
	f.mu.Unlock()
	cfg := resultsgrpctest.Config(srv.addr)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	exp = resultsgrpctest.Start(t, cfg, nil)
	ld = resultbatch.Logs(2500, 2500, 0)
	resultbatch.AppendDecision(ld, "d-2")
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, []int{1000, 1000, 1000, 500}, f.requestSizes())
	assert.Len(t, srv.fleet().Failing, 3500, "the 1,500 of the first batch were never resent")
	assert.Equal(t, map[string]int64{"accepted": 2500, "skipped": 1}, exp.Counts("results", "outcome"))
	assert.Equal(t, map[string]int64{"OK": 3, "Unavailable": 1}, exp.Counts("requests", "code"))
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
	cfg := resultsgrpctest.Config(srv.addr)
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	require.NoError(t, resultsgrpctest.Start(t, cfg, nil).ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0)))
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
	cfg := resultsgrpctest.Config(srv.addr)
	cfg.MaxResultsPerRequest = 40
	cfg.TimeoutConfig.Timeout = 2 * time.Second
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 200 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 0
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.StorageID = &filestoragetest.ID
	cfg.QueueConfig = configoptional.Some(queue)
	exp := resultsgrpctest.Start(t, cfg, host)

	retries := func() int {
		return exp.Log.FilterMessage("Exporting failed. Will retry the request after interval.").Len()
	}
	batches, retriedBefore := 0, 0
	for round := range rounds {
		for first := 0; first < keys; first += perBatch {
			require.NoError(t, exp.ConsumeLogs(context.Background(), resultbatch.Logs(first, perBatch, round)))
			batches++
			switch batches {
			case 6:
				// The server stops once it has what was queued so far; the next batches wait in the queue.
				require.Eventually(t, func() bool { return exp.Sent() == int64(batches*perBatch) }, 30*time.Second,
					10*time.Millisecond, "%d of %d results sent", exp.Sent(), batches*perBatch)
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
		r := resultbatch.Result(i, rounds-1)
		want[r.Key()] = r.ID()
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rows, ids := history(t, dsn)
		assert.Equal(c, keys*rounds, rows)
		assert.Equal(c, keys*rounds, ids)
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, []store.ClusterCounts{{Cluster: resultbatch.Cluster, Counts: store.Counts{Pass: keys, Total: keys}}}, srv.fleet().Clusters)
	assert.Equal(t, want, currentIDs(t, dsn))

	codes := exp.Counts("requests", "code")
	assert.Positive(t, codes["Unavailable"], "requests failed while the server was down: %v", codes)
	// Every result was accepted once, and more only when a request was stored but its answer lost.
	assert.GreaterOrEqual(t, exp.Counts("results", "outcome")["accepted"], int64(keys*rounds))
	t.Logf("requests by code: %v; results: %v", codes, exp.Counts("results", "outcome"))
}

// testStatus: see resultsgrpctest.CheckStatus.
func testStatus(t *testing.T, dsn string) {
	srv := startServer(t, dsn)
	resultsgrpctest.CheckStatus(t, srv, resultsgrpctest.Config(srv.addr))
	assert.Len(t, srv.fleet().Failing, 9)
}
