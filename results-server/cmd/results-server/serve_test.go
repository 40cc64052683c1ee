// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testcerts"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// defaultLimits are the limits the README documents.
var defaultLimits = limitOptions{
	grpc: server.Limits{MaxRecvMsgSize: 4 << 20, MaxResults: 10000, MaxConcurrentStreams: 32,
		MaxHeaderBytes: 16 << 10, RequestTimeout: time.Minute, HandshakeTimeout: 10 * time.Second,
		MaxConnectionIdle: 5 * time.Minute, IngestBudget: 64 << 20, MaxConcurrentQueries: 4,
		QueryQueueWait: time.Second, QueryTimeout: 30 * time.Second, MaxWriteConns: 8, AuthFailures: 10},
	maxConcurrentStreams: 32, maxHeaderBytes: 16 << 10, maxConnections: 512, httpMaxConnections: 128,
	httpReadHeaderTimeout: 10 * time.Second, httpReadTimeout: 30 * time.Second, httpWriteTimeout: time.Minute,
	httpIdleTimeout: time.Minute, httpMaxConcurrentStreams: 16,
	silent:     server.ConnLimits{MaxSilentPerSource: 128, FirstCallTimeout: 10 * time.Second},
	httpSilent: server.ConnLimits{MaxSilentPerSource: 32, FirstCallTimeout: 10 * time.Second},
}

// collectorToken is the token of the tests that serve with a token file.
const collectorToken = "collector-secret-0123456789abcdef"

func TestParseServeFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    serveOptions
		wantErr string
	}{{
		args: []string{"--listen", ":7443"},
		want: serveOptions{listen: ":7443", db: DefaultDB, dbFrom: "default", logLevel: "info", limits: defaultLimits, retention: defaultRetention, ingest: defaultIngest},
	}, {
		args: []string{"--listen", "127.0.0.1:7443", "--db", "postgres://u:p@db:5432/results?sslmode=disable",
			"--token-file", "tokens", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "ca.pem",
			"--http-listen", ":8080", "--log-level", "debug"},
		want: serveOptions{listen: "127.0.0.1:7443", db: "postgres://u:p@db:5432/results?sslmode=disable", dbFrom: "--db",
			tokenFile: "tokens", tlsCert: "c.pem", tlsKey: "k.pem", clientCA: "ca.pem", httpListen: ":8080", logLevel: "debug",
			limits: defaultLimits, retention: defaultRetention, ingest: defaultIngest},
	}, {
		args: []string{"-listen=:1", "-db=sqlite:///var/lib/results.db"},
		want: serveOptions{listen: ":1", db: "sqlite:///var/lib/results.db", dbFrom: "--db", logLevel: "info", limits: defaultLimits, retention: defaultRetention, ingest: defaultIngest},
	}, {
		args: []string{"--listen", ":1", "--max-recv-msg-size", "1048576", "--max-results-per-request", "500",
			"--max-concurrent-streams", "4", "--max-header-bytes", "8192", "--request-timeout", "5s",
			"--handshake-timeout", "2s", "--max-connection-idle", "1m", "--max-connections", "10",
			"--http-max-connections", "3", "--http-read-header-timeout", "1s", "--http-read-timeout", "2s",
			"--http-write-timeout", "3s", "--http-idle-timeout", "4s", "--first-call-timeout", "5s",
			"--max-silent-connections-per-source", "6", "--http-first-request-timeout", "7s",
			"--http-max-silent-connections-per-source", "8", "--http-max-concurrent-streams", "8",
			"--ingest-budget", "33554432", "--max-concurrent-queries", "2", "--query-queue-wait", "100ms",
			"--query-timeout", "5s", "--db-max-write-conns", "3", "--auth-failures-per-minute", "5"},
		want: serveOptions{listen: ":1", db: DefaultDB, dbFrom: "default", logLevel: "info", limits: limitOptions{
			grpc: server.Limits{MaxRecvMsgSize: 1 << 20, MaxResults: 500, MaxConcurrentStreams: 4,
				MaxHeaderBytes: 8192, RequestTimeout: 5 * time.Second, HandshakeTimeout: 2 * time.Second,
				MaxConnectionIdle: time.Minute, IngestBudget: 32 << 20, MaxConcurrentQueries: 2,
				QueryQueueWait: 100 * time.Millisecond, QueryTimeout: 5 * time.Second, MaxWriteConns: 3, AuthFailures: 5},
			maxConcurrentStreams: 4, maxHeaderBytes: 8192, maxConnections: 10, httpMaxConnections: 3,
			httpReadHeaderTimeout: time.Second, httpReadTimeout: 2 * time.Second, httpWriteTimeout: 3 * time.Second,
			httpIdleTimeout: 4 * time.Second, httpMaxConcurrentStreams: 8,
			silent:     server.ConnLimits{MaxSilentPerSource: 6, FirstCallTimeout: 5 * time.Second},
			httpSilent: server.ConnLimits{MaxSilentPerSource: 8, FirstCallTimeout: 7 * time.Second},
		}, retention: defaultRetention, ingest: defaultIngest},
	},
		{args: []string{"--listen", ":1", "--ingest-budget", "1048576"},
			wantErr: "serve: ingest budget 1048576 bytes: want at least 27942912, what one request of the max receive message size (4194304 bytes) and max results (10000) may cost"},
		{args: []string{"--listen", ":1", "--max-concurrent-queries", "0", "--http-max-concurrent-streams", "0"},
			wantErr: "serve: --max-concurrent-queries must be positive\n--http-max-concurrent-streams must be positive"},
		{args: []string{"--listen", ":1", "--db", "sqlite://./a.db", "--db-file", "dsn"}, wantErr: "serve: --db and --db-file: give one"},
		{args: []string{"--listen", ":1", "--max-recv-msg-size", "0"}, wantErr: "serve: --max-recv-msg-size must be positive"},
		{args: []string{"--listen", ":1", "--max-connections", "-1", "--http-idle-timeout", "0s"},
			wantErr: "serve: --max-connections must be positive\n--http-idle-timeout must be positive"},
		{args: []string{"--listen", ":1", "--first-call-timeout", "0s", "--http-max-silent-connections-per-source", "0"},
			wantErr: "serve: --first-call-timeout must be positive\n--http-max-silent-connections-per-source must be positive"},
		{args: []string{"--listen", ":1", "--max-concurrent-streams", "4294967296"},
			wantErr: "serve: --max-concurrent-streams must be at most 4294967295"},
		{args: []string{"--listen", ":1", "--request-timeout", "soon"},
			wantErr: `invalid value "soon" for flag -request-timeout: parse error`},
		{args: []string{}, wantErr: "serve: --listen is required"},
		{args: []string{"--listen", ":1", "--db", ""}, wantErr: "serve: --db must not be empty"},
		{args: []string{"--listen", ":1", "--tls-cert", "c.pem"}, wantErr: "serve: --tls-cert and --tls-key go together"},
		{args: []string{"--listen", ":1", "--tls-key", "k.pem"}, wantErr: "serve: --tls-cert and --tls-key go together"},
		{args: []string{"--listen", ":1", "--client-ca", "ca.pem"}, wantErr: "serve: --client-ca needs --tls-cert and --tls-key"},
		{args: []string{"--listen", ":1", "--log-level", "loud"}, wantErr: `serve: --log-level: unrecognized level: "loud"`},
		{args: []string{"--listen", ":1", "extra"}, wantErr: `serve: unexpected argument "extra"`},
		{args: []string{"--listen", ":1", "--port", "1"}, wantErr: "flag provided but not defined: -port"},
	}
	for _, tt := range tests {
		got, err := parseServeFlags(tt.args, io.Discard)
		if tt.wantErr != "" {
			assert.EqualError(t, err, tt.wantErr, "%v", tt.args)
			var ue usageError
			assert.True(t, errors.As(err, &ue), "a usage error: %v", tt.args)
			continue
		}
		require.NoError(t, err, "%v", tt.args)
		assert.Equal(t, tt.want, got, "%v", tt.args)
	}
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"start"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		var ue usageError
		assert.True(t, errors.As(err, &ue), "%v: %v", args, err)
	}
	assert.ErrorIs(t, run(context.Background(), []string{"serve", "-h"}, io.Discard, io.Discard), flag.ErrHelp)
}

func sampleResult(cluster string) *pb.Result {
	r := policyresult.Result{Cluster: cluster, Source: "kyverno", Policy: "require-labels", Rule: "check-team",
		Outcome: policyresult.OutcomeFail, Severity: policyresult.SeverityHigh, Message: "label team missing",
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart"},
		State:    policyresult.StateNew}
	return resultsapi.FromResult(&r)
}

// TestServe runs serve in-process as the command line configures it, with TLS or mutual TLS files and a token
// file, and forwards through a real gRPC client.
func TestServe(t *testing.T) {
	certs := testcerts.New(t)
	for _, mutual := range []bool{false, true} {
		t.Run(map[bool]string{false: "tls", true: "mutual tls"}[mutual], func(t *testing.T) {
			dir := t.TempDir()
			files := certs.Write(t, dir)
			tokenFile := filepath.Join(dir, "tokens")
			require.NoError(t, os.WriteFile(tokenFile, []byte("# the test collector\n"+collectorToken+"\n"), 0o600))
			ports, err := freeport.Ports(2)
			require.NoError(t, err)
			addr, httpAddr := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
			args := []string{"--listen", addr, "--http-listen", httpAddr, "--db", "sqlite://" + filepath.Join(dir, "data", "results.db"),
				"--token-file", tokenFile, "--tls-cert", files.ServerCert, "--tls-key", files.ServerKey}
			if mutual {
				args = append(args, "--client-ca", files.CA)
			}
			o, err := parseServeFlags(args, io.Discard)
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- serve(ctx, o, zap.NewNop()) }()
			defer func() {
				cancel()
				select {
				case err := <-done:
					assert.NoError(t, err, "a graceful stop")
				case <-time.After(20 * time.Second):
					t.Error("serve did not stop")
				}
			}()

			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(certs.ClientTLS(t, mutual))))
			require.NoError(t, err)
			defer conn.Close()
			client := pb.NewResultForwarderClient(conn)
			forward := func(token string) (*pb.ForwardResponse, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
				// Waits for the server to listen instead of failing while it starts.
				return client.Forward(ctx, &pb.ForwardRequest{Results: []*pb.Result{sampleResult("east")}},
					grpc.WaitForReady(true))
			}
			_, err = forward("wrong")
			assert.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
			resp, err := forward(collectorToken)
			require.NoError(t, err)
			assert.Equal(t, uint32(1), resp.GetAccepted())
			assert.FileExists(t, filepath.Join(dir, "data", "results.db"), "the database directory is created")

			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(t, mutual)}}
			defer hc.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodGet, "https://"+httpAddr+"/v1/fleet", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+collectorToken)
			hresp, err := hc.Do(req)
			require.NoError(t, err)
			defer hresp.Body.Close()
			var view struct {
				Clusters []map[string]any `json:"clusters"`
			}
			require.Equal(t, http.StatusOK, hresp.StatusCode)
			require.NoError(t, json.NewDecoder(hresp.Body).Decode(&view))
			assert.Equal(t, []map[string]any{{"cluster": "east", "pass": 0.0, "fail": 1.0, "warn": 0.0, "error": 0.0,
				"skip": 0.0, "total": 1.0}}, view.Clusters)

			if mutual {
				noCert, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(certs.ClientTLS(t, false))))
				require.NoError(t, err)
				defer noCert.Close()
				ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(),
					"authorization", "Bearer "+collectorToken), 10*time.Second)
				defer cancel()
				_, err = pb.NewResultForwarderClient(noCert).Forward(ctx, &pb.ForwardRequest{Results: []*pb.Result{sampleResult("west")}})
				assert.Equal(t, codes.Unavailable, status.Code(err), "a client without a certificate: %v", err)
				_, err = (&http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(t, false)}}).Do(req)
				assert.Error(t, err, "the fleet view also needs a client certificate")
			}
		})
	}
}

func TestServeFailsEarly(t *testing.T) {
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	empty := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	// A token of the grants' format shorter than the minimum, named by its line, never by its value.
	short := filepath.Join(dir, "short-tokens")
	require.NoError(t, os.WriteFile(short, []byte("# a collector\nshort-secret write=east read\n"), 0o600))
	for _, tt := range []struct {
		o       serveOptions
		wantErr string
	}{
		{serveOptions{listen: "127.0.0.1:0", db: "sqlite://" + dir + "/r.db", tokenFile: empty}, "token file: " + empty + " has no tokens"},
		{serveOptions{listen: "127.0.0.1:0", db: "sqlite://" + dir + "/r.db", tokenFile: short},
			"resultsserver: " + short + ":2: token of 12 bytes: want at least 32 (make one with `openssl rand -hex 32`)"},
		{serveOptions{listen: "127.0.0.1:0", db: "sqlite://" + dir + "/r.db", tlsCert: dir + "/c.pem", tlsKey: dir + "/k.pem"}, "TLS certificate: open " + dir + "/c.pem: no such file or directory"},
		{serveOptions{listen: "127.0.0.1:0", db: "mysql://x"}, "resultsserver: database mysql://x: want a sqlite:// or postgres:// DSN"},
		{serveOptions{listen: taken.Addr().String(), db: "sqlite://" + dir + "/r.db"}, "address already in use"},
	} {
		err := serve(context.Background(), tt.o, zap.NewNop())
		assert.ErrorContains(t, err, tt.wantErr, "%+v", tt.o)
		assert.NotContains(t, err.Error(), "short-secret", "a token is never in an error")
	}
}
