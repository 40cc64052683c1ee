// Package resultsserver is the reference server of the results forwarding API (proto/policyresults/v1): it
// checks and stores forwarded results in SQLite or PostgreSQL, idempotently, and serves a fleet view of the
// current state. cmd/results-server wraps it in a command; tests of the results_grpc exporter run it in-process.
package resultsserver // import "github.com/otelcol-policy/otelcol-policy/internal/resultsserver"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// Config configures a Server.
type Config struct {
	// DB names the database: "sqlite:///abs/path.db", "sqlite://./relative.db" or
	// "postgres://user:pass@host:port/db?sslmode=disable" (any connection string pgx accepts, postgresql://
	// too).
	DB string
	// Tokens are the accepted bearer tokens (gRPC metadata "authorization: Bearer <token>"); none means no token
	// authentication, for servers behind mutual TLS or on a trusted network.
	Tokens []string
	// Logger may be nil.
	Logger *zap.Logger
}

// Server stores forwarded results and answers fleet queries. It is safe for concurrent use; one Server may
// back any number of gRPC and HTTP servers.
type Server struct {
	store  *store
	tokens [][]byte
	logger *zap.Logger
	// now is the clock of received and updated times; tests fix it.
	now func() time.Time
}

// Open opens the database, creating the schema or migrating it to the current version.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	tokens := make([][]byte, 0, len(cfg.Tokens))
	for _, t := range cfg.Tokens {
		if t == "" {
			return nil, errors.New("resultsserver: empty token")
		}
		tokens = append(tokens, []byte(t))
	}
	st, err := openStore(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("resultsserver: %w", err)
	}
	return &Server{store: st, tokens: tokens, logger: logger, now: time.Now}, nil
}

// GRPCServer returns a gRPC server with the ResultForwarder service registered and, when tokens are
// configured, the token check in front of it. Callers add grpc.Creds for TLS or mutual TLS, then Serve it and
// stop it themselves; its interceptors are chained, so callers may add their own.
func (s *Server) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	all := make([]grpc.ServerOption, 0, len(opts)+2)
	if len(s.tokens) > 0 {
		all = append(all, grpc.ChainUnaryInterceptor(s.unaryAuth), grpc.ChainStreamInterceptor(s.streamAuth))
	}
	gs := grpc.NewServer(append(all, opts...)...)
	pb.RegisterResultForwarderServer(gs, &forwarder{s: s})
	return gs
}

// Close closes the database. Stop the gRPC and HTTP servers first.
func (s *Server) Close() error { return s.store.close() }
