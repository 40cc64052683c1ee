// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter_test

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// forwarder is an in-test ResultForwarder: the real service of proto/policyresults/v1 over real gRPC on a
// loopback port, which keeps the latest result of each key and answers what the test tells it to. The exporter's
// tests against the real results server, and its databases, are in testbed/resultsgrpc.
type forwarder struct {
	pb.UnimplementedResultForwarderServer
	t    *testing.T
	addr string
	// token, when set, is the bearer token every call must carry, else UNAUTHENTICATED.
	token string
	creds credentials.TransportCredentials

	mu sync.Mutex
	gs *grpc.Server
	// fail answers Forward call n (counted from 1, refused calls included) with a status instead.
	fail map[int]*status.Status
	// reject, when set, gives the reason to reject a result, "" to accept it.
	reject func(*pb.Result) string
	// stored are the accepted results by key; calls, the times of every call; sizes, the results of each call
	// that reached the handler; metadata, the extra_metadata of the last request.
	stored   map[string]*pb.Result
	calls    []time.Time
	sizes    []int
	metadata map[string]string
}

type forwarderOption func(*forwarder)

func withToken(token string) forwarderOption { return func(f *forwarder) { f.token = token } }

func withTLS(cfg *tls.Config) forwarderOption {
	return func(f *forwarder) { f.creds = credentials.NewTLS(cfg) }
}

func withFailures(fail map[int]*status.Status) forwarderOption {
	return func(f *forwarder) { f.fail = fail }
}

func withRejections(reject func(*pb.Result) string) forwarderOption {
	return func(f *forwarder) { f.reject = reject }
}

func startForwarder(t *testing.T, opts ...forwarderOption) *forwarder {
	f := &forwarder{t: t, stored: map[string]*pb.Result{}}
	for _, o := range opts {
		o(f)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(f.stop)
	return f
}

func (f *forwarder) serve(ln net.Listener) {
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(f.intercept)}
	if f.creds != nil {
		opts = append(opts, grpc.Creds(f.creds))
	}
	gs := grpc.NewServer(opts...)
	pb.RegisterResultForwarderServer(gs, f)
	f.mu.Lock()
	f.gs = gs
	f.mu.Unlock()
	go func() { _ = gs.Serve(ln) }()
}

// Addr, Stop and Restart make it a resultsgrpctest.Server.
func (f *forwarder) Addr() string { return f.addr }

func (f *forwarder) Stop() { f.stop() }

func (f *forwarder) Restart() { f.restart() }

// stop stops serving at once, as a crash would.
func (f *forwarder) stop() {
	f.mu.Lock()
	gs := f.gs
	f.gs = nil
	f.mu.Unlock()
	if gs != nil {
		gs.Stop()
	}
}

// restart serves again on the same port, keeping what was stored.
func (f *forwarder) restart() {
	ln, err := net.Listen("tcp", f.addr)
	require.NoError(f.t, err)
	f.serve(ln)
}

// intercept counts every call, then checks its token and the failures the test chose.
func (f *forwarder) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	st := f.fail[len(f.calls)]
	f.mu.Unlock()
	if f.token != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+f.token {
			return nil, status.Error(codes.Unauthenticated, "missing or invalid bearer token")
		}
	}
	if st != nil {
		return nil, st.Err()
	}
	return h(ctx, req)
}

func (f *forwarder) Forward(_ context.Context, req *pb.ForwardRequest) (*pb.ForwardResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes = append(f.sizes, len(req.GetResults()))
	f.metadata = req.GetExtraMetadata()
	resp := &pb.ForwardResponse{}
	for i, r := range req.GetResults() {
		if f.reject != nil {
			if reason := f.reject(r); reason != "" {
				resp.Rejected = append(resp.Rejected, &pb.Rejection{Index: uint32(i), Id: r.GetId(), Reason: reason})
				continue
			}
		}
		f.stored[r.GetKey()] = r
		resp.Accepted++
	}
	return resp, nil
}

// ids are the stored results' ids by key.
func (f *forwarder) ids() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]string, len(f.stored))
	for k, r := range f.stored {
		out[k] = r.GetId()
	}
	return out
}

func (f *forwarder) callTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *forwarder) requestSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sizes)
}

func (f *forwarder) lastMetadata() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.metadata
}
