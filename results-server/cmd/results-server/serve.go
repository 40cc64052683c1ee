// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// DefaultDB is where serve and fleet keep results when --db is not given.
const DefaultDB = "sqlite://./data/results.db"

// shutdownTimeout bounds how long a stopping server waits for requests in flight.
const shutdownTimeout = 10 * time.Second

type serveOptions struct {
	listen, db, tokenFile, tlsCert, tlsKey, clientCA, httpListen, logLevel string
	// dbFrom says where db came from (see dbFlags.dsn).
	dbFrom    string
	limits    limitOptions
	retention retentionOptions
	ingest    ingestOptions
}

func parseServeFlags(args []string, stderr io.Writer) (serveOptions, error) {
	var o serveOptions
	var db dbFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "", "gRPC listen address, host:port (required)")
	db.register(fs, "database: sqlite:///abs/path.db, sqlite://./rel.db or postgres://user:pass@host:port/db?sslmode=disable")
	fs.StringVar(&o.tokenFile, "token-file", "", "file of accepted bearer tokens, one per line with what each may do: TOKEN [read] [write=CLUSTER,...] (a token alone reads and writes every cluster; at least 32 bytes)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serves TLS")
	fs.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&o.clientCA, "client-ca", "", "CA file (PEM) client certificates must chain to: mutual TLS")
	fs.StringVar(&o.httpListen, "http-listen", "", "fleet view HTTP listen address, host:port (off when empty)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	o.limits.register(fs)
	o.retention.register(fs)
	o.ingest.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return serveOptions{}, err
	}
	if err := errors.Join(o.limits.validate(), o.retention.validate(), o.ingest.validate()); err != nil {
		return serveOptions{}, usageError{fmt.Errorf("serve: %w", err)}
	}
	var err error
	if o.db, o.dbFrom, err = db.dsn(fs, os.Getenv); err != nil {
		return serveOptions{}, usageError{fmt.Errorf("serve: %w", err)}
	}
	switch {
	case o.listen == "":
		return serveOptions{}, usageError{errors.New("serve: --listen is required")}
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return serveOptions{}, usageError{errors.New("serve: --tls-cert and --tls-key go together")}
	case o.clientCA != "" && o.tlsCert == "":
		return serveOptions{}, usageError{errors.New("serve: --client-ca needs --tls-cert and --tls-key")}
	}
	if _, err := zapcore.ParseLevel(o.logLevel); err != nil {
		return serveOptions{}, usageError{fmt.Errorf("serve: --log-level: %w", err)}
	}
	return o, nil
}

func newLogger(w io.Writer, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)), nil
}

// tlsConfig is nil without --tls-cert; with --client-ca, clients must present a certificate it signed.
func tlsConfig(o serveOptions) (*tls.Config, error) {
	if o.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if o.clientCA != "" {
		pem, err := os.ReadFile(o.clientCA)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s: no PEM certificate", o.clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// serve runs the servers until ctx is done, then stops them gracefully: requests in flight finish (for at most
// shutdownTimeout), so a collector's last batch is either stored and acknowledged or refused and retried.
func serve(ctx context.Context, o serveOptions, logger *zap.Logger) error {
	var tokens []server.Token
	if o.tokenFile != "" {
		var err error
		if tokens, err = readTokens(o.tokenFile); err != nil {
			return fmt.Errorf("token file: %w", err)
		}
	}
	tlsCfg, err := tlsConfig(o)
	if err != nil {
		return err
	}
	srv, err := server.Open(ctx, server.Config{DB: o.db, Tokens: tokens, Limits: o.limits.grpc,
		Ingest: o.ingest.limits, Retention: o.retention.config(), Logger: logger})
	if err != nil {
		return err
	}
	defer srv.Close()
	// The pruner stops before the database closes (deferred calls run last first), also when a listener fails.
	pctx, stopPruning := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() { srv.RunRetention(pctx); close(pruned) }()
	defer func() { stopPruning(); <-pruned }()

	var opts []grpc.ServerOption
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	gs := srv.GRPCServer(opts...)
	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	lis = srv.LimitListener(lis, server.ListenerGRPC, o.limits.connLimits(true))
	var hs *http.Server
	var hlis net.Listener
	if o.httpListen != "" {
		if hlis, err = net.Listen("tcp", o.httpListen); err != nil {
			lis.Close()
			return err
		}
		hlis = srv.LimitListener(hlis, server.ListenerHTTP, o.limits.connLimits(false))
		hs = o.limits.httpServer(srv.HTTPHandler())
		hs.TLSConfig, hs.ErrorLog = tlsCfg, zap.NewStdLog(logger.Named("http"))
		// Authenticated requests prove their connection through it (server.ConnLimits).
		hs.ConnContext = connlimit.WithConn
	}

	security := "plaintext"
	switch {
	case tlsCfg != nil && tlsCfg.ClientCAs != nil:
		security = "mutual TLS"
	case tlsCfg != nil:
		security = "TLS"
	}
	if tlsCfg == nil && len(tokens) > 0 {
		logger.Warn("bearer tokens over plaintext: anyone on the network path can read them; use --tls-cert and --tls-key")
	}
	if tlsCfg == nil && len(tokens) == 0 {
		logger.Warn("no TLS and no tokens: any client that reaches the port can forward results")
	}
	if o.dbFrom == "--db" && hasPassword(o.db) {
		logger.Warn("the --db DSN holds a password, which every user of this machine can read in the process list: " +
			"use --db-file or $" + DBEnv)
	}
	logger.Info("serving", zap.String("grpc", lis.Addr().String()), zap.String("security", security),
		zap.Int("tokens", len(tokens)), zap.String("http", o.httpListen))

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(lis) }()
	if hs != nil {
		go func() {
			var err error
			if tlsCfg != nil {
				err = hs.ServeTLS(hlis, "", "")
			} else {
				err = hs.Serve(hlis)
			}
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- err
		}()
	}

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case serveErr = <-errc:
		logger.Error("server failed, shutting down", zap.Error(serveErr))
	}
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if hs != nil {
		_ = hs.Shutdown(sctx)
	}
	select {
	case <-stopped:
	case <-sctx.Done():
		gs.Stop()
	}
	return serveErr
}
