// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package server is the reference server of the results forwarding API (proto/policyresults/v1): the gRPC
// ingest API, which authenticates, bounds and checks forwarded results before the store (package store) keeps
// them in SQLite or PostgreSQL, idempotently; and the fleet view of the current state, as an HTTP API and a web
// UI. cmd/results-server wraps it in a command; tests of the results_grpc exporter run it in-process.
package server // import "github.com/otelcol-policy/otelcol-policy/results-server/server"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// Config configures a Server.
type Config struct {
	// DB names the database: "sqlite:///abs/path.db", "sqlite://./relative.db" or
	// "postgres://user:pass@host:port/db?sslmode=disable" (any connection string pgx accepts, postgresql://
	// too).
	DB string
	// Tokens are the accepted bearer tokens (gRPC metadata "authorization: Bearer <token>") and what each may
	// read and write; none means no token authentication, for servers behind mutual TLS or on a trusted network.
	Tokens []Token
	// Limits bound the gRPC API; zero fields take their defaults.
	Limits Limits
	// Ingest bounds what results and tokens may store; zero fields take their defaults.
	Ingest IngestLimits
	// Retention prunes old history and resolved results when RunRetention runs; the zero value keeps
	// everything.
	Retention Retention
	// Logger may be nil.
	Logger *zap.Logger
}

// Server stores forwarded results and answers fleet queries. It is safe for concurrent use; one Server may
// back any number of gRPC and HTTP servers.
type Server struct {
	store   *store.Store
	tokens  []*principal
	limits  Limits
	ingest  IngestLimits
	metrics metrics
	logger  *zap.Logger
	// now is the clock of received and updated times; tests fix it.
	now func() time.Time

	// retention is what RunRetention prunes; its clock is now.
	retention Retention

	// grpcConns are the gRPC listeners of LimitListener, whose connections tapCall proves.
	grpcConns limitedListeners
	// budget bounds the requests being received, decoded and stored; queries the fleet queries in flight.
	budget  *ingestBudget
	queries *querySlots
	// authFailures limits failed authentications per source address on the HTTP listener.
	authFailures *failureLimiter
}

// Open opens the database, creating the schema or migrating it to the current version.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("resultsserver: %w", err)
	}
	if err := errors.Join(cfg.Retention.Validate(), cfg.Ingest.Validate()); err != nil {
		return nil, fmt.Errorf("resultsserver: %w", err)
	}
	tokens, err := newPrincipals(cfg.Tokens)
	if err != nil {
		return nil, fmt.Errorf("resultsserver: %w", err)
	}
	l := cfg.Limits.withDefaults()
	st, err := store.Open(ctx, cfg.DB, store.Pools{Writers: l.MaxWriteConns, Readers: l.MaxConcurrentQueries})
	if err != nil {
		return nil, fmt.Errorf("resultsserver: %w", err)
	}
	return &Server{store: st, tokens: tokens, limits: l, ingest: cfg.Ingest.withDefaults(),
		retention: cfg.Retention.withDefaults(), logger: logger, now: time.Now, budget: newIngestBudget(l),
		queries: newQuerySlots(l), authFailures: newFailureLimiter(l.AuthFailures, time.Now)}, nil
}

// GRPCServer returns a gRPC server with the ResultForwarder service registered, the token check (when tokens
// are configured) and the Limits. Callers add grpc.Creds for TLS or mutual TLS, then Serve it and stop it
// themselves. Its interceptors are chained, so callers may add their own; they must not add an InTapHandle
// (gRPC takes one), a codec, MaxRecvMsgSize, MaxConcurrentStreams, MaxHeaderListSize, ConnectionTimeout or
// KeepaliveParams, which would replace the Limits.
//
// The token is checked in an InTapHandle, on the call's headers, before gRPC reads any of its message or starts
// a handler for it (see tapCall): an unauthenticated client costs the server a header decode per call.
func (s *Server) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	l := s.limits
	all := append([]grpc.ServerOption{
		grpc.InTapHandle(s.tapCall),
		grpc.ForceServerCodecV2(requestCodec{maxResults: l.MaxResults, refused: func() { s.metrics.grpcTooManyResults.Add(1) }}),
		grpc.MaxRecvMsgSize(l.MaxRecvMsgSize),
		grpc.MaxConcurrentStreams(l.MaxConcurrentStreams),
		grpc.MaxHeaderListSize(l.MaxHeaderBytes),
		grpc.ConnectionTimeout(l.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.MaxConnectionIdle}),
		grpc.StatsHandler(callCounter{&s.metrics}),
		grpc.StatsHandler(&s.grpcConns),
	}, opts...)
	gs := grpc.NewServer(all...)
	s.registerForwarder(gs)
	return gs
}

// Close closes the database. Stop the gRPC and HTTP servers first.
func (s *Server) Close() error { return s.store.Close() }
