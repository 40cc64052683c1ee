// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/hostileclient"
	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

const limitsToken = "limits-secret-0123456789abcdef-0123"

func limitedServer(t *testing.T, l Limits) (*Server, string) {
	t.Helper()
	s, err := Open(context.Background(), Config{DB: "sqlite://" + t.TempDir() + "/results.db", Tokens: fullAccess(limitsToken), Limits: l})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, serveGRPC(t, s)
}

func rawConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func withToken() context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+limitsToken)
}

func totalAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestUnauthenticatedCallIsRefusedBeforeItIsRead: calls without a token, each a 4 MiB request of empty results
// (which decode to 2 Mi results, about 500 MiB), are UNAUTHENTICATED, and the whole process (server and client)
// allocates a small fraction of one message for all of them: the message is never read, let alone decoded.
func TestUnauthenticatedCallIsRefusedBeforeItIsRead(t *testing.T) {
	s, addr := limitedServer(t, Limits{})
	conn := rawConn(t, addr)
	msg := hostileclient.EmptyResults(DefaultMaxRecvMsgSize)
	// The first call sets up the connection and gRPC's pools.
	require.Equal(t, codes.Unauthenticated, status.Code(hostileclient.Forward(context.Background(), conn, msg, &pb.ForwardResponse{})))

	const calls = 20
	before := totalAlloc()
	for range calls {
		err := hostileclient.Forward(context.Background(), conn, msg, &pb.ForwardResponse{})
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	}
	perCall := (totalAlloc() - before) / calls
	t.Logf("allocated %d bytes per unauthenticated 4 MiB call", perCall)
	// The process's allocations include the client's framing of the 4 MiB it sends; under -race, sync.Pool drops
	// buffers at random and these reach a few hundred KiB a call. A server that read the message would allocate
	// its 4 MiB at least.
	assert.Less(t, perCall, uint64(1<<20), "a call costs far less than its 4 MiB message")
	assert.Equal(t, uint64(calls+1), s.metrics.grpcUnauthenticated.Load())
	assert.Zero(t, s.metrics.calls[codes.OK].Load()+s.metrics.calls[codes.Unauthenticated].Load(), "no handler ran")
}

// TestMaxConcurrentStreams: a client that ignores SETTINGS_MAX_CONCURRENT_STREAMS gets its streams beyond the
// limit reset with REFUSED_STREAM; a gRPC client waits for a free stream instead.
func TestMaxConcurrentStreams(t *testing.T) {
	_, addr := limitedServer(t, Limits{MaxConcurrentStreams: 4})
	c, err := hostileclient.Dial(addr, 16)
	require.NoError(t, err)
	defer c.Close()
	for range 4 + 3 {
		_, err := c.OpenStream("Bearer "+limitsToken, 1<<20, make([]byte, 1024))
		require.NoError(t, err)
	}
	outcomes, err := c.Wait(3, 10*time.Second)
	require.NoError(t, err)
	for _, o := range outcomes {
		assert.Equal(t, hostileclient.Outcome{StreamID: o.StreamID, Reset: true, Code: http2.ErrCodeRefusedStream}, o)
	}
	assert.Equal(t, []uint32{9, 11, 13}, []uint32{outcomes[0].StreamID, outcomes[1].StreamID, outcomes[2].StreamID},
		"the first four streams are held")
}

// TestMaxRecvMsgSize: a request message over the limit is RESOURCE_EXHAUSTED, and counted.
func TestMaxRecvMsgSize(t *testing.T) {
	s, addr := limitedServer(t, Limits{MaxRecvMsgSize: 1 << 20})
	conn := rawConn(t, addr)
	err := hostileclient.Forward(withToken(), conn, hostileclient.EmptyResults(1<<20+2), &pb.ForwardResponse{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Eventually(t, func() bool { return s.metrics.calls[codes.ResourceExhausted].Load() == 1 }, 5*time.Second, 10*time.Millisecond)
}

// TestMaxResultsPerRequest: a request with more results than the limit is refused before it is decoded; one
// at the limit is decoded and answered (here, every empty result rejected).
func TestMaxResultsPerRequest(t *testing.T) {
	s, addr := limitedServer(t, Limits{MaxResults: 100})
	conn := rawConn(t, addr)
	err := hostileclient.Forward(withToken(), conn, hostileclient.EmptyResults(2*101), &pb.ForwardResponse{})
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Contains(t, err.Error(), "more than 100 results in one request, the server's limit")
	assert.Equal(t, uint64(1), s.metrics.grpcTooManyResults.Load())

	var resp pb.ForwardResponse
	require.NoError(t, hostileclient.Forward(withToken(), conn, hostileclient.EmptyResults(2*100), &resp))
	assert.Len(t, resp.GetRejected(), 100)
	assert.Equal(t, uint64(1), s.metrics.grpcTooManyResults.Load())
}

func TestCountResults(t *testing.T) {
	full := batch(podA.pb(), podB.pb())
	full.ExtraMetadata = map[string]string{"environment": "test"}
	b, err := protoCodec.Marshal(full)
	require.NoError(t, err)
	assert.Equal(t, 2, countResults(b, 10))
	assert.Equal(t, 2, countResults(b, 1), "counting stops past the limit")
	// Split into buffers of 3 bytes, as frames split a message anywhere.
	var split mem.BufferSlice
	for m := b.Materialize(); len(m) > 0; m = m[min(3, len(m)):] {
		split = append(split, mem.SliceBuffer(m[:min(3, len(m))]))
	}
	assert.Equal(t, 2, countResults(split, 10), "fields across buffers")
	assert.Equal(t, 0, countResults(mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x05, 0x00})}, 10), "a truncated field ends the count")
}

// TestRequestTimeout: a call whose client stops sending halfway through its message ends at the request
// timeout with DEADLINE_EXCEEDED instead of holding its stream and buffer.
func TestRequestTimeout(t *testing.T) {
	s, addr := limitedServer(t, Limits{RequestTimeout: 300 * time.Millisecond})
	c, err := hostileclient.Dial(addr, 4)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.OpenStream("Bearer "+limitsToken, 1<<20, make([]byte, 1024))
	require.NoError(t, err)
	outcomes, err := c.Wait(1, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "4", outcomes[0].GRPCStatus, "DEADLINE_EXCEEDED: %+v", outcomes[0])
	require.Eventually(t, func() bool { return s.metrics.calls[codes.DeadlineExceeded].Load() == 1 }, 5*time.Second, 10*time.Millisecond)
}

// TestMaxHeaderBytes: a header field over the limit ends the connection while the headers are decoded, before
// the token is even looked at.
func TestMaxHeaderBytes(t *testing.T) {
	s, addr := limitedServer(t, Limits{MaxHeaderBytes: 1024})
	c, err := hostileclient.Dial(addr, 4)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.OpenStream("Bearer "+strings.Repeat("x", 2048), 16, nil)
	require.NoError(t, err)
	_, err = c.Wait(1, 10*time.Second)
	require.ErrorIs(t, err, hostileclient.ErrNoOutcome)
	assert.Zero(t, s.metrics.grpcUnauthenticated.Load())
}

// TestLimitListener: a connection refused by the limit (pkg/connlimit) is counted for its listener.
func TestLimitListener(t *testing.T) {
	s := sqliteServer(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := s.LimitListener(inner, ListenerHTTP, ConnLimits{Max: 1})
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			connlimit.ProveConn(c) // as an authenticated request would: the next one is refused, not evicting it
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		defer c.Close()
	}
	require.Eventually(t, func() bool { return s.metrics.connectionsRefused[ListenerHTTP].Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Zero(t, s.metrics.connectionsRefused[ListenerGRPC].Load())
}
