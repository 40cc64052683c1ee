// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// idsByKey is what a server holds of results first..first+n-1 of round: each id by its key.
func idsByKey(first, n, round int) map[string]string {
	out := make(map[string]string, n)
	for i := first; i < first+n; i++ {
		r := resultbatch.Result(i, round)
		out[r.Key()] = r.ID()
	}
	return out
}

// withRetry retries quickly, for as long as maxElapsed (0: until it succeeds).
func withRetry(cfg *resultsgrpcexporter.Config, maxElapsed time.Duration) *resultsgrpcexporter.Config {
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = maxElapsed
	return cfg
}

func TestForwardSendsRequestsOfAtMostMaxResults(t *testing.T) {
	f := startForwarder(t)
	cfg := resultsgrpctest.Config(f.addr)
	extra := map[string]string{"environment": "production", "region": "eu-west-1"}
	cfg.ExtraMetadata = extra
	exp := resultsgrpctest.Start(t, cfg, nil)

	// 2,500 results in requests of at most 1,000, and a decision, which is skipped.
	ld := resultbatch.Logs(0, 2500, 0)
	resultbatch.AppendDecision(ld, "d-1")
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, []int{1000, 1000, 500}, f.requestSizes())
	assert.Equal(t, idsByKey(0, 2500, 0), f.ids(), "every result under the key and id of pkg/policyresult")
	assert.Equal(t, extra, f.lastMetadata())

	assert.Equal(t, map[string]int64{"accepted": 2500, "skipped": 1}, exp.Counts("results", "outcome"))
	assert.Equal(t, map[string]int64{"OK": 3}, exp.Counts("requests", "code"))
	assert.Empty(t, exp.Counts("rejections", "reason"))
	assert.Equal(t, 1, exp.Log.FilterMessageSnippet("Skipping records that are not policy.result records").Len())
}

func TestTLS(t *testing.T) {
	p := resultsgrpctest.NewPKI(t)
	f := startForwarder(t, withTLS(p.ServerTLS(false)))
	cfg := resultsgrpctest.Config(f.addr)
	cfg.ClientConfig.TLS.Insecure = false
	cfg.ClientConfig.TLS.CAFile = p.CAFile
	require.NoError(t, resultsgrpctest.Start(t, cfg, nil).ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0)))
	assert.Len(t, f.ids(), 10)

	// A server whose certificate the client cannot verify is retried: the error is gRPC's UNAVAILABLE.
	cfg.ClientConfig.TLS.CAFile = p.OtherCAFile
	exp := resultsgrpctest.Start(t, cfg, nil)
	err := exp.ConsumeLogs(context.Background(), resultbatch.Logs(10, 10, 0))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "%v", err)
	assert.ErrorContains(t, err, "x509: certificate signed by unknown authority")
	assert.Equal(t, map[string]int64{"Unavailable": 1}, exp.Counts("requests", "code"))
	assert.Len(t, f.ids(), 10)
}

// TestMutualTLS: without a client certificate, or with one the server does not trust, the handshake fails, which
// gRPC reports as UNAVAILABLE: retried, as a certificate being rotated becomes valid without a restart.
func TestMutualTLS(t *testing.T) {
	p := resultsgrpctest.NewPKI(t)
	f := startForwarder(t, withTLS(p.ServerTLS(true)))
	for _, tt := range []struct {
		name, cert, key string
		ok              bool
	}{
		{name: "trusted client certificate", cert: p.ClientCert, key: p.ClientKey, ok: true},
		{name: "no client certificate"},
		{name: "untrusted client certificate", cert: p.OtherClient, key: p.OtherClientKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := resultsgrpctest.Config(f.addr)
			cfg.ClientConfig.TLS.Insecure = false
			cfg.ClientConfig.TLS.CAFile = p.CAFile
			cfg.ClientConfig.TLS.CertFile, cfg.ClientConfig.TLS.KeyFile = tt.cert, tt.key
			exp := resultsgrpctest.Start(t, cfg, nil)
			err := exp.ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0))
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.False(t, consumererror.IsPermanent(err), "%v", err)
			assert.ErrorContains(t, err, "results not forwarded yet: rpc error: code = Unavailable desc = ")
			assert.Equal(t, map[string]int64{"Unavailable": 1}, exp.Counts("requests", "code"))
		})
	}
	assert.Len(t, f.ids(), 10)
}

// TestToken: the token goes as a header or through bearertokenauth; a refused one is a permanent error, not
// retried, which names what to check and not the token.
func TestToken(t *testing.T) {
	const right, wrong = "right-token-0123456789abcdef-01234", "wrong-token-9876543210fedcba-43210"
	p := resultsgrpctest.NewPKI(t)
	// bearertokenauth sends its token only over TLS.
	f := startForwarder(t, withTLS(p.ServerTLS(false)), withToken(right))
	config := func(header string) *resultsgrpcexporter.Config {
		cfg := withRetry(resultsgrpctest.Config(f.addr), 2*time.Second)
		cfg.ClientConfig.TLS.Insecure = false
		cfg.ClientConfig.TLS.CAFile = p.CAFile
		if header != "" {
			cfg.ClientConfig.Headers.Set("authorization", configopaque.String(header))
		}
		return cfg
	}
	for _, tt := range []struct {
		name  string
		cfg   *resultsgrpcexporter.Config
		host  component.Host
		right bool
	}{
		{"header/right token", config("Bearer " + right), nil, true},
		{"bearertokenauth/right token", resultsgrpctest.WithBearerAuth(config("")), resultsgrpctest.NewTokenHost(t, right), true},
		{"header/wrong token", config("Bearer " + wrong), nil, false},
		{"bearertokenauth/wrong token", resultsgrpctest.WithBearerAuth(config("")), resultsgrpctest.NewTokenHost(t, wrong), false},
		{"no token", config(""), nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.callTimes())
			exp := resultsgrpctest.Start(t, tt.cfg, tt.host)
			err := exp.ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0))
			assert.Len(t, f.callTimes(), before+1, "one attempt, no retry")
			if tt.right {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, consumererror.IsPermanent(err))
			assert.EqualError(t, err, "not retryable error: Permanent error: "+f.addr+": 10 of 10 results dropped: "+
				"the server refused the credentials: check headers::authorization or the auth extension's token: "+
				"rpc error: code = Unauthenticated desc = missing or invalid bearer token")
			assert.NotContains(t, err.Error(), "token-")
			assert.Equal(t, map[string]int64{"Unauthenticated": 1}, exp.Counts("requests", "code"))
		})
	}
}

// TestRejectedResultsAreDroppedNotRetried: what the server rejects is counted by reason class and logged, the
// first ten one by one, and never sent again; a record whose key does not match its attributes is not sent.
func TestRejectedResultsAreDroppedNotRetried(t *testing.T) {
	f := startForwarder(t, withRejections(func(r *pb.Result) string {
		switch {
		case strings.Contains(r.GetMessage(), "\x00"):
			return resultsgrpctest.ReasonNUL
		case r.GetCluster() == "":
			return resultsgrpctest.ReasonNoCluster
		}
		return ""
	}))
	exp := resultsgrpctest.Start(t, withRetry(resultsgrpctest.Config(f.addr), 0), nil)
	batch := resultsgrpctest.NewRejectable()
	require.NoError(t, exp.ConsumeLogs(context.Background(), batch.Logs), "rejected results are not retried")
	assert.Equal(t, idsByKey(0, 4, 0), f.ids())
	assert.Len(t, f.callTimes(), 1)
	batch.CheckRejected(t, exp)
	resultsgrpctest.CheckManyRejectionsLogged(t, exp)
}

// TestRetryResendsOnlyUnsent: a request that fails hands back its records and those of the requests after it,
// never those already stored.
func TestRetryResendsOnlyUnsent(t *testing.T) {
	unavailable := func() map[int]*status.Status {
		return map[int]*status.Status{2: status.New(codes.Unavailable, "restarting")}
	}
	f := startForwarder(t, withFailures(unavailable()))
	ld := resultbatch.Logs(0, 2500, 0)
	resultbatch.AppendDecision(ld, "d-1")
	err := resultsgrpctest.Start(t, resultsgrpctest.Config(f.addr), nil).ConsumeLogs(context.Background(), ld)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.EqualError(t, err, f.addr+": 1500 of 2500 results not forwarded yet: rpc error: code = Unavailable desc = restarting")
	logsErr, ok := errors.AsType[consumererror.Logs](err)
	require.True(t, ok)
	require.Equal(t, 1500, logsErr.Data().LogRecordCount())
	first := logsErr.Data().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	key, _ := first.Attributes().Get(policyresult.AttrResultKey)
	r1000 := resultbatch.Result(1000, 0)
	assert.Equal(t, r1000.Key(), key.Str())
	assert.Equal(t, idsByKey(0, 1000, 0), f.ids())

	// With retry, exporterhelper resends them.
	f = startForwarder(t, withFailures(unavailable()))
	exp := resultsgrpctest.Start(t, withRetry(resultsgrpctest.Config(f.addr), 0), nil)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, []int{1000, 1000, 500}, f.requestSizes(), "the second request failed before its handler")
	assert.Len(t, f.callTimes(), 4)
	assert.Equal(t, idsByKey(0, 2500, 0), f.ids())
	assert.Equal(t, map[string]int64{"accepted": 2500, "skipped": 1}, exp.Counts("results", "outcome"))
	assert.Equal(t, map[string]int64{"OK": 3, "Unavailable": 1}, exp.Counts("requests", "code"))
}

// TestRetryInfoSetsTheDelay: a busy server's RetryInfo, not the exporter's own 10 ms, sets when it retries.
func TestRetryInfoSetsTheDelay(t *testing.T) {
	st, err := status.New(codes.ResourceExhausted, "busy").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(700 * time.Millisecond)})
	require.NoError(t, err)
	f := startForwarder(t, withFailures(map[int]*status.Status{1: st}))
	require.NoError(t, resultsgrpctest.Start(t, withRetry(resultsgrpctest.Config(f.addr), 0), nil).
		ConsumeLogs(context.Background(), resultbatch.Logs(0, 10, 0)))
	times := f.callTimes()
	require.Len(t, times, 2)
	assert.GreaterOrEqual(t, times[1].Sub(times[0]), 700*time.Millisecond)
	assert.Len(t, f.ids(), 10)
}

// TestStatusFollowsTheCalls: see resultsgrpctest.CheckStatus.
func TestStatusFollowsTheCalls(t *testing.T) {
	f := startForwarder(t)
	resultsgrpctest.CheckStatus(t, f, resultsgrpctest.Config(f.addr))
	assert.Equal(t, idsByKey(0, 9, 0), f.ids())
}
