// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// fleetDB forwards the results of two clusters, through a real gRPC server, into a new SQLite database.
func fleetDB(t *testing.T) string {
	t.Helper()
	result := func(cluster, source, policy, ns, name string, o policyresult.Outcome, sev policyresult.Severity, msg string) *pb.Result {
		r := policyresult.Result{Cluster: cluster, Source: source, Policy: policy, Rule: "check", Outcome: o,
			Severity: sev, Message: msg, State: policyresult.StateNew,
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}}
		return resultsapi.FromResult(&r)
	}
	return forwardDB(t,
		result("east", "kyverno", "require-labels", "shop", "cart", policyresult.OutcomeFail, policyresult.SeverityHigh, "label team\nmissing"),
		result("east", "kyverno", "require-labels", "shop", "web", policyresult.OutcomePass, "", ""),
		result("east", "kyverno", "disallow-latest", "billing", "api", policyresult.OutcomeError, "", "evaluation failed"),
		result("west", "trivy", "CVE-2026-1234", "shop", "cart", policyresult.OutcomeFail, policyresult.SeverityCritical, "openssl is vulnerable"),
		result("west", "kyverno", "require-labels", "shop", "cart", policyresult.OutcomeSkip, "", ""),
	)
}

// forwardDB forwards results, through a real gRPC server, into a new SQLite database.
func forwardDB(t *testing.T, results ...*pb.Result) string {
	t.Helper()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "results.db")
	srv, err := server.Open(context.Background(), server.Config{DB: dsn})
	require.NoError(t, err)
	defer srv.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := srv.GRPCServer()
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := pb.NewResultForwarderClient(conn).Forward(ctx, &pb.ForwardRequest{Results: results})
	require.NoError(t, err)
	require.Equal(t, uint32(len(results)), resp.GetAccepted()) //nolint:gosec // G115: a test's handful of results
	return dsn
}

func TestFleetCommand(t *testing.T) {
	dsn := fleetDB(t)
	tests := []struct {
		args []string
		want string
	}{{
		args: []string{"--db", dsn},
		want: `CLUSTER  PASS  FAIL  WARN  ERROR  SKIP  TOTAL
east     1     1     0     1      0     3
west     0     1     0     0      1     2

CLUSTER  SOURCE   POLICY           PASS  FAIL  WARN  ERROR  SKIP  TOTAL
east     kyverno  disallow-latest  0     0     0     1      0     1
east     kyverno  require-labels   1     1     0     0      0     2
west     kyverno  require-labels   0     0     0     0      1     1
west     trivy    CVE-2026-1234    0     1     0     0      0     1

FAILING (3)
CLUSTER  NAMESPACE  RESOURCE  SOURCE   POLICY           RULE   SEVERITY  OUTCOME  MESSAGE
east     billing    Pod/api   kyverno  disallow-latest  check  -         error    evaluation failed
east     shop       Pod/cart  kyverno  require-labels   check  high      fail     label team missing
west     shop       Pod/cart  trivy    CVE-2026-1234    check  critical  fail     openssl is vulnerable
`,
	}, {
		args: []string{"--db", dsn, "--cluster", "west", "--severity", "critical"},
		want: `CLUSTER  PASS  FAIL  WARN  ERROR  SKIP  TOTAL
west     0     1     0     0      0     1

CLUSTER  SOURCE  POLICY         PASS  FAIL  WARN  ERROR  SKIP  TOTAL
west     trivy   CVE-2026-1234  0     1     0     0      0     1

FAILING (1)
CLUSTER  NAMESPACE  RESOURCE  SOURCE  POLICY         RULE   SEVERITY  OUTCOME  MESSAGE
west     shop       Pod/cart  trivy   CVE-2026-1234  check  critical  fail     openssl is vulnerable
`,
	}, {
		args: []string{"--db", dsn, "--namespace", "nowhere"},
		want: `CLUSTER  PASS  FAIL  WARN  ERROR  SKIP  TOTAL

CLUSTER  SOURCE  POLICY  PASS  FAIL  WARN  ERROR  SKIP  TOTAL

FAILING (0)
`,
	}, {
		args: []string{"--db", dsn, "--cluster", "east", "--limit", "1"},
		want: `CLUSTER  PASS  FAIL  WARN  ERROR  SKIP  TOTAL
east     1     1     0     1      0     3

CLUSTER  SOURCE   POLICY           PASS  FAIL  WARN  ERROR  SKIP  TOTAL
east     kyverno  disallow-latest  0     0     0     1      0     1
east     kyverno  require-labels   1     1     0     0      0     2

FAILING (first 1; raise --limit for more)
CLUSTER  NAMESPACE  RESOURCE  SOURCE   POLICY           RULE   SEVERITY  OUTCOME  MESSAGE
east     billing    Pod/api   kyverno  disallow-latest  check  -         error    evaluation failed
`,
	}}
	for _, tt := range tests {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), append([]string{"fleet"}, tt.args...), &out, io.Discard), "%v", tt.args)
		assert.Equal(t, tt.want, out.String(), "%v", tt.args)
	}
}

func TestFleetCommandJSON(t *testing.T) {
	dsn := fleetDB(t)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"fleet", "--db", dsn, "--output", "json", "--cluster", "west"}, &out, io.Discard))
	var v store.FleetView
	require.NoError(t, json.Unmarshal(out.Bytes(), &v))
	assert.Equal(t, []store.ClusterCounts{{Cluster: "west", Counts: store.Counts{Fail: 1, Skip: 1, Total: 2}}}, v.Clusters)
	assert.Equal(t, []store.PolicyCounts{
		{Cluster: "west", Source: "kyverno", Policy: "require-labels", Counts: store.Counts{Skip: 1, Total: 1}},
		{Cluster: "west", Source: "trivy", Policy: "CVE-2026-1234", Counts: store.Counts{Fail: 1, Total: 1}},
	}, v.Policies)
	require.Len(t, v.Failing, 1)
	got := v.Failing[0]
	assert.Equal(t, []string{"west", "trivy", "CVE-2026-1234", "critical", "fail", "openssl is vulnerable", "shop", "cart"},
		[]string{got.Cluster, got.Source, got.Policy, got.Severity, got.Outcome, got.Message, got.Resource.Namespace, got.Resource.Name})
	assert.False(t, got.UpdatedAt.IsZero())
}

func TestFleetCommandErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args    []string
		wantErr string
		usage   bool
	}{
		{[]string{"--db", "sqlite://" + dir + "/missing.db"}, "no database at " + dir + "/missing.db: no such file or directory", false},
		{[]string{"--output", "yaml"}, `fleet: --output "yaml": want text or json`, true},
		{[]string{"--severity", "urgent"}, `fleet: severity "urgent": want one of critical, high, medium, low, info`, true},
		{[]string{"--limit", "-1"}, "fleet: limit -1: want 0 (no limit) or more", true},
		{[]string{"east"}, `fleet: unexpected argument "east"`, true},
	} {
		err := run(context.Background(), append([]string{"fleet"}, tt.args...), io.Discard, io.Discard)
		assert.EqualError(t, err, tt.wantErr, "%v", tt.args)
		var ue usageError
		assert.Equal(t, tt.usage, errors.As(err, &ue), "%v", tt.args)
	}
}
