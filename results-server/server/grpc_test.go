// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testcerts"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// serveGRPC serves s on a free loopback port until the test ends.
func serveGRPC(t *testing.T, s *Server, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := s.GRPCServer(opts...)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) pb.ResultForwarderClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewResultForwarderClient(conn)
}

func callForward(c pb.ResultForwarderClient, ctx context.Context, req *pb.ForwardRequest) (*pb.ForwardResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.Forward(ctx, req)
}

// firstToken and secondToken are the tokens of the tests of the gRPC API's authentication.
const (
	firstToken  = "first-secret-0123456789abcdef-01234"
	secondToken = "second-secret-0123456789abcdef-0123"
)

func sqliteServer(t *testing.T, tokens ...string) *Server {
	return open(t, "sqlite://"+t.TempDir()+"/results.db", tokens...)
}

func TestGRPCOverTLS(t *testing.T) {
	certs := testcerts.New(t)
	s := sqliteServer(t)
	addr := serveGRPC(t, s, grpc.Creds(credentials.NewTLS(certs.ServerTLS(t, false))))

	resp, err := callForward(dial(t, addr, credentials.NewTLS(certs.ClientTLS(t, false))), context.Background(), batch(podA.pb()))
	require.NoError(t, err)
	assert.Equal(t, uint32(1), resp.GetAccepted())

	_, err = callForward(dial(t, addr, insecure.NewCredentials()), context.Background(), batch(podB.pb()))
	assert.Equal(t, codes.Unavailable, status.Code(err), "plaintext to a TLS server: %v", err)
	_, err = callForward(dial(t, addr, credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})), context.Background(), batch(podB.pb()))
	assert.Equal(t, codes.Unavailable, status.Code(err), "a client that does not trust the CA: %v", err)
	assert.Len(t, current(t, s), 1)
}

func TestGRPCOverMutualTLS(t *testing.T) {
	certs := testcerts.New(t)
	s := sqliteServer(t)
	addr := serveGRPC(t, s, grpc.Creds(credentials.NewTLS(certs.ServerTLS(t, true))))

	_, err := callForward(dial(t, addr, credentials.NewTLS(certs.ClientTLS(t, false))), context.Background(), batch(podB.pb()))
	assert.Equal(t, codes.Unavailable, status.Code(err), "a client without a certificate is refused: %v", err)
	assert.Empty(t, current(t, s))

	resp, err := callForward(dial(t, addr, credentials.NewTLS(certs.ClientTLS(t, true))), context.Background(), batch(podA.pb()))
	require.NoError(t, err)
	assert.Equal(t, uint32(1), resp.GetAccepted())
	assert.Len(t, current(t, s), 1)
}

func TestGRPCTokens(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/results.db",
		Tokens: fullAccess(firstToken, secondToken), Logger: zap.New(core)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	client := dial(t, serveGRPC(t, s), insecure.NewCredentials())

	tests := []struct {
		name          string
		authorization []string
		want          codes.Code
	}{
		{"no token", nil, codes.Unauthenticated},
		{"wrong token", []string{"Bearer wrong-secret-0123456789abcdef-01234"}, codes.Unauthenticated},
		{"a prefix of a token", []string{"Bearer first"}, codes.Unauthenticated},
		{"not a bearer token", []string{"Basic " + firstToken}, codes.Unauthenticated},
		{"two tokens", []string{"Bearer " + firstToken, "Bearer " + secondToken}, codes.Unauthenticated},
		{"first token", []string{"Bearer " + firstToken}, codes.OK},
		{"second token, scheme in lower case", []string{"bearer " + secondToken}, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			for _, a := range tt.authorization {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", a)
			}
			resp, err := callForward(client, ctx, batch(podA.pb()))
			require.Equal(t, tt.want, status.Code(err), "%v", err)
			if tt.want == codes.OK {
				assert.Equal(t, uint32(1), resp.GetAccepted())
			}
		})
	}
	assert.NotZero(t, logs.Len())
	for _, e := range logs.All() {
		line := e.Message
		for _, f := range e.Context {
			line += " " + f.String + " " + f.Key
		}
		assert.NotContains(t, line, "secret", "tokens are never logged")
	}
	assert.False(t, strings.Contains(errUnauthenticated.Error(), "secret"))
}

func TestGRPCServerKeepsCallersInterceptors(t *testing.T) {
	s := sqliteServer(t, firstToken)
	var called bool
	addr := serveGRPC(t, s, grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		called = true
		return h(ctx, req)
	}))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+firstToken)
	_, err := callForward(dial(t, addr, insecure.NewCredentials()), ctx, batch(podA.pb()))
	require.NoError(t, err)
	assert.True(t, called)
}
