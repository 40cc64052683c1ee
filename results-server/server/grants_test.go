// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/internal/dbtest"
)

const (
	eastToken    = "east-secret-0123456789abcdef-01234"
	gatewayToken = "gateway-secret-0123456789abcdef-012"
	adminToken   = "admin-secret-0123456789abcdef-0123"
)

var grantTokens = []Token{
	{Secret: eastToken, Write: []string{"east"}},
	{Secret: gatewayToken, Write: []string{AnyCluster}},
	{Secret: readerToken, Read: true},
	FullAccess(adminToken),
}

func bearerContext(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// TestClusterGrants: a token writes the clusters it names and no other, whether the result names its cluster or
// takes it from extra_metadata; a token that may only read cannot forward; one that may only write cannot read.
func TestClusterGrants(t *testing.T) {
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/r.db", Tokens: grantTokens})
	client := dial(t, serveGRPC(t, s), insecure.NewCredentials())
	east := spec{cluster: "east", policy: "p", name: "a", outcome: policyresult.OutcomeFail, observed: 1}
	west := spec{cluster: "west", policy: "p", name: "a", outcome: policyresult.OutcomeFail, observed: 1}
	unnamed := spec{policy: "p", name: "b", outcome: policyresult.OutcomeFail, observed: 1}

	resp, err := callForward(client, bearerContext(eastToken), batch(east.pb(), west.pb()))
	require.NoError(t, err)
	assert.Equal(t, uint32(1), resp.GetAccepted())
	assert.Equal(t, []*pb.Rejection{{Index: 1, Id: idOf(west), Reason: `this token may not write results of cluster "west"`}}, resp.GetRejected())

	// The cluster from extra_metadata is the one checked.
	resp, err = callForward(client, bearerContext(eastToken), &pb.ForwardRequest{Results: []*pb.Result{unnamed.pb()},
		ExtraMetadata: map[string]string{policyresult.AttrClusterName: "west"}})
	require.NoError(t, err)
	assert.Zero(t, resp.GetAccepted())
	resp, err = callForward(client, bearerContext(gatewayToken), &pb.ForwardRequest{Results: []*pb.Result{unnamed.pb(), west.pb()},
		ExtraMetadata: map[string]string{policyresult.AttrClusterName: "west"}})
	require.NoError(t, err)
	assert.Equal(t, uint32(2), resp.GetAccepted())

	_, err = callForward(client, bearerContext(readerToken), batch(east.pb()))
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)

	m := metricsText(t, s)
	assert.Contains(t, m, `results_server_results_rejected_total{reason="cluster_not_allowed"} 2`)
	assert.Contains(t, m, `results_server_requests_refused_total{api="grpc",reason="read_only"} 1`)

	hs := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(hs.Close)
	for token, want := range map[string]int{eastToken: 401, gatewayToken: 401, readerToken: 200, adminToken: 200} {
		req, err := http.NewRequest(http.MethodGet, hs.URL+"/v1/fleet", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hs.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, token)
	}
	assert.True(t, s.validToken(readerToken), "the web UI signs in tokens that may read")
	assert.False(t, s.validToken(eastToken))
}

func TestTokensAreChecked(t *testing.T) {
	for _, tt := range []struct {
		tokens  []Token
		wantErr string
	}{
		{[]Token{{Secret: ""}}, "resultsserver: token 1: empty token"},
		{[]Token{FullAccess(adminToken), {Secret: adminToken, Read: true, Name: "line 7"}}, "resultsserver: line 7 repeats token 1"},
		{[]Token{{Secret: adminToken, Write: []string{""}}}, "resultsserver: token 1: a cluster name is empty or holds a NUL"},
	} {
		_, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/r.db", Tokens: tt.tokens})
		assert.EqualError(t, err, tt.wantErr)
	}
}

// TestFutureTimesCannotPin: a result whose time is beyond the clock skew is ordered by when it arrived, so a
// pass observed in 2262 (forged, or from a clock far ahead) no longer keeps the result's next failure from
// becoming current. Within the skew, times order as sent.
func TestFutureTimesCannotPin(t *testing.T) {
	dbtest.EachBackend(t, func(t *testing.T, newDSN func(t *testing.T) string) {
		s := open(t, newDSN(t))
		now := t0.Add(time.Hour)
		s.now = func() time.Time { return now }
		observedAt := func(sp spec, at time.Time) *pb.Result {
			r := sp.pb()
			r.ObservedTimestamp = timestamppb.New(at)
			return r
		}
		pass := with(podA, func(s *spec) { s.outcome, s.message, s.state = policyresult.OutcomePass, "", policyresult.StateChanged })
		forward(t, s, batch(observedAt(pass, time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC))))
		got := current(t, s)[keyOf(podA)]
		assert.Equal(t, "pass", got.Outcome)
		assert.Equal(t, now.UnixNano(), got.Order, "ordered when it arrived")

		now = now.Add(time.Minute)
		forward(t, s, batch(observedAt(podA, now.Add(-time.Second))))
		assert.Equal(t, "fail", current(t, s)[keyOf(podA)].Outcome, "the collector's next outcome is current")

		// Within the skew, a time ahead orders as sent: an outcome observed before it does not replace it.
		ahead := now.Add(DefaultMaxClockSkew - time.Second)
		forward(t, s, batch(observedAt(pass, ahead)))
		assert.Equal(t, ahead.UnixNano(), current(t, s)[keyOf(podA)].Order)
		forward(t, s, batch(observedAt(with(podA, func(s *spec) { s.message = "later" }), now)))
		assert.Equal(t, "pass", current(t, s)[keyOf(podA)].Outcome)

		assert.Contains(t, metricsText(t, s), "results_server_future_times_total 1")
	})
}
