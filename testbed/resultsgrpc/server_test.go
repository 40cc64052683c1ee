// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpc

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/stats"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// backend is a database the reference server stores into.
type backend struct {
	name string
	// start prepares the backend for the subtests of t and returns how each subtest gets its own empty
	// database, as the server's DSN.
	start func(t *testing.T) (newDB func(t *testing.T) string)
}

// backends are SQLite in a temporary directory and PostgreSQL (internal/testutil/pgtest: one server for all subtests
// of the backend, one database per subtest).
var backends = []backend{
	{name: "sqlite", start: func(*testing.T) func(*testing.T) string {
		return func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "results.db") }
	}},
	{name: "postgres", start: func(t *testing.T) func(*testing.T) string {
		pg := pgtest.Start(t)
		n := 0
		return func(*testing.T) string {
			n++
			return pg.CreateDB(fmt.Sprintf("results_%d", n))
		}
	}},
}

// testServer is the reference results server in-process: results-server/server on its database, behind a real gRPC
// server on a loopback port, which restart replaces on the same port.
type testServer struct {
	t      *testing.T
	dsn    string
	tokens []string
	creds  credentials.TransportCredentials
	// extra are gRPC server options of the test, such as interceptors that inject faults.
	extra []grpc.ServerOption
	// limits are the server's; the zero value takes its defaults.
	limits server.Limits

	addr string
	mu   sync.Mutex
	srv  *server.Server
	gs   *grpc.Server
	// calls counts the Forward calls that began: not those the token check refused (see attempts).
	calls atomic.Int64
}

type serverOption func(*testServer)

func withTokens(tokens ...string) serverOption { return func(s *testServer) { s.tokens = tokens } }
func withTLS(cfg *tls.Config) serverOption {
	return func(s *testServer) { s.creds = credentials.NewTLS(cfg) }
}
func withLimits(l server.Limits) serverOption { return func(s *testServer) { s.limits = l } }
func withServerOptions(opts ...grpc.ServerOption) serverOption {
	return func(s *testServer) { s.extra = append(s.extra, opts...) }
}

func startServer(t *testing.T, dsn string, opts ...serverOption) *testServer {
	s := &testServer{t: t, dsn: dsn}
	for _, o := range opts {
		o(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.open()
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) open() {
	var tokens []server.Token
	for _, t := range s.tokens {
		tokens = append(tokens, server.FullAccess(t))
	}
	srv, err := server.Open(context.Background(), server.Config{DB: s.dsn, Tokens: tokens, Limits: s.limits, Logger: zap.NewNop()})
	require.NoError(s.t, err)
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

func (s *testServer) serve(ln net.Listener) {
	opts := append([]grpc.ServerOption{grpc.StatsHandler(callCounter{&s.calls})}, s.extra...)
	if s.creds != nil {
		opts = append(opts, grpc.Creds(s.creds))
	}
	s.mu.Lock()
	s.gs = s.srv.GRPCServer(opts...)
	s.mu.Unlock()
	go func() { _ = s.gs.Serve(ln) }()
}

// Addr, Stop and Restart make it a resultsgrpctest.Server.
func (s *testServer) Addr() string { return s.addr }

func (s *testServer) Stop() { s.stop() }

func (s *testServer) Restart() { s.restart() }

// stop stops the gRPC server at once, as a crash would: requests in flight fail.
func (s *testServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gs == nil {
		return
	}
	s.gs.Stop()
	s.gs = nil
	require.NoError(s.t, s.srv.Close())
}

// restart opens the same database again and serves it on the same port, as a restarted server process.
func (s *testServer) restart() {
	ln, err := net.Listen("tcp", s.addr)
	require.NoError(s.t, err)
	s.open()
	s.serve(ln)
}

func (s *testServer) fleet() store.FleetView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.srv.Fleet(context.Background(), store.Filter{})
	require.NoError(s.t, err)
	return v
}

func (s *testServer) result(key string) store.ResultDetail {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.srv.Result(context.Background(), key)
	require.NoError(s.t, err)
	return d
}

// attempts counts every Forward call that reached the server: those that began, and those the token check
// refused before they began (the server checks tokens in an InTapHandle, before any stats handler sees a call).
func (s *testServer) attempts() int64 {
	s.mu.Lock()
	h := s.srv.HTTPHandler()
	s.mu.Unlock()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if len(s.tokens) > 0 {
		req.Header.Set("Authorization", "Bearer "+s.tokens[0])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(s.t, http.StatusOK, rec.Code)
	refused, found := selfmetrics.Sum(rec.Body.String(), "results_server_requests_refused_total", `api="grpc",reason="unauthenticated"`)
	require.True(s.t, found)
	return s.calls.Load() + int64(refused)
}

// callCounter counts RPCs as they begin, before any interceptor; calls refused by the token check do not begin.
type callCounter struct{ n *atomic.Int64 }

func (c callCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c callCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.Begin); ok {
		c.n.Add(1)
	}
}
func (c callCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (c callCounter) HandleConn(context.Context, stats.ConnStats)                       {}

// openDB opens the server's database for what the fleet view does not show: the history of outcomes.
func openDB(t *testing.T, dsn string) *sql.DB {
	var db *sql.DB
	var err error
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		db, err = sql.Open("sqlite", path)
	} else {
		db, err = sql.Open("pgx", dsn)
	}
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// history counts the rows of result_history: every (id, state) stored, and the distinct ids among them.
func history(t *testing.T, dsn string) (rows, ids int) {
	db := openDB(t, dsn)
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT id) FROM result_history`).Scan(&rows, &ids))
	return rows, ids
}

// currentIDs maps every key of the results table (the current state) to its id.
func currentIDs(t *testing.T, dsn string) map[string]string {
	rows, err := openDB(t, dsn).Query(`SELECT key, id FROM results`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var key, id string
		require.NoError(t, rows.Scan(&key, &id))
		out[key] = id
	}
	require.NoError(t, rows.Err())
	return out
}
