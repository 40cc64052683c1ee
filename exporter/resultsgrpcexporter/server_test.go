// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/stats"

	"github.com/otelcol-policy/otelcol-policy/internal/resultsserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
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

// testServer is the reference results server in-process: resultsserver on its database, behind a real gRPC
// server on a loopback port, which restart replaces on the same port.
type testServer struct {
	t      *testing.T
	dsn    string
	tokens []string
	creds  credentials.TransportCredentials
	// extra are gRPC server options of the test, such as interceptors that inject faults.
	extra []grpc.ServerOption
	// limits are the server's; the zero value takes its defaults.
	limits resultsserver.Limits

	addr string
	mu   sync.Mutex
	srv  *resultsserver.Server
	gs   *grpc.Server
	// calls counts the Forward calls that began: not those the token check refused (see attempts).
	calls atomic.Int64
}

type serverOption func(*testServer)

func withTokens(tokens ...string) serverOption { return func(s *testServer) { s.tokens = tokens } }
func withTLS(cfg *tls.Config) serverOption {
	return func(s *testServer) { s.creds = credentials.NewTLS(cfg) }
}
func withLimits(l resultsserver.Limits) serverOption { return func(s *testServer) { s.limits = l } }
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
	var tokens []resultsserver.Token
	for _, t := range s.tokens {
		tokens = append(tokens, resultsserver.FullAccess(t))
	}
	srv, err := resultsserver.Open(context.Background(), resultsserver.Config{DB: s.dsn, Tokens: tokens, Limits: s.limits, Logger: zap.NewNop()})
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

func (s *testServer) fleet() resultsserver.FleetView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.srv.Fleet(context.Background(), resultsserver.Filter{})
	require.NoError(s.t, err)
	return v
}

func (s *testServer) result(key string) resultsserver.ResultDetail {
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

// pki is a CA generated for one test, with a server certificate for 127.0.0.1 and a client certificate, all
// written as PEM files for the exporter's tls settings.
type pki struct {
	dir                       string
	caFile                    string
	clientCert, clientKey     string
	server                    tls.Certificate
	pool                      *x509.CertPool
	otherCAFile               string
	otherClient, otherClientK string
}

func newPKI(t *testing.T) *pki {
	p := &pki{dir: t.TempDir(), pool: x509.NewCertPool()}
	ca, caKey := newCA(t, "test CA")
	p.pool.AddCert(ca)
	p.caFile = p.writePEM(t, "ca.pem", "CERTIFICATE", ca.Raw)

	serverDER, serverKey := issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "results-server"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	p.server = tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}

	clientDER, clientKey := issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "otelcol-policy"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.clientCert = p.writePEM(t, "client.pem", "CERTIFICATE", clientDER)
	p.clientKey = p.writeKey(t, "client-key.pem", clientKey)

	// A client certificate from a CA the server does not trust.
	other, otherKey := newCA(t, "other CA")
	p.otherCAFile = p.writePEM(t, "other-ca.pem", "CERTIFICATE", other.Raw)
	otherDER, otherClientKey := issue(t, other, otherKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "intruder"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.otherClient = p.writePEM(t, "other-client.pem", "CERTIFICATE", otherDER)
	p.otherClientK = p.writeKey(t, "other-client-key.pem", otherClientKey)
	return p
}

// serverTLS is the server's configuration; mutual requires and verifies client certificates.
func (p *pki) serverTLS(mutual bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.pool
	}
	return cfg
}

var serial atomic.Int64

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return der, key
}

func (p *pki) writePEM(t *testing.T, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}

func (p *pki) writeKey(t *testing.T, name string, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return p.writePEM(t, name, "PRIVATE KEY", der)
}
