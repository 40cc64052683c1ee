// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// Defaults of the limits serve has beyond the library's own (server.Limits).
const (
	// A gRPC connection holds about 70 KiB (read and write buffers, HTTP/2 state, two goroutines) before its
	// first call; 512 of them are under 40 MiB.
	defaultMaxConnections     = 512
	defaultHTTPMaxConnections = 128
	defaultReadHeaderTimeout  = 10 * time.Second
	defaultHTTPReadTimeout    = 30 * time.Second
	defaultHTTPWriteTimeout   = time.Minute
	defaultHTTPIdleTimeout    = time.Minute
	// The web UI's pages load with their stylesheet: a browser needs a few streams; each stream's query waits for
	// a query slot anyway.
	defaultHTTPMaxConcurrentStreams = 16
)

// limitOptions are serve's limits: every one a flag with a safe default.
type limitOptions struct {
	grpc                                                     server.Limits
	maxConcurrentStreams, maxHeaderBytes                     uint
	maxConnections, httpMaxConnections                       int
	httpReadHeaderTimeout, httpReadTimeout, httpWriteTimeout time.Duration
	httpIdleTimeout                                          time.Duration
	httpMaxConcurrentStreams                                 uint
	// silent are the limits on connections not yet authenticated (server.ConnLimits), by listener.
	silent, httpSilent server.ConnLimits
}

func (o *limitOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.grpc.MaxRecvMsgSize, "max-recv-msg-size", server.DefaultMaxRecvMsgSize,
		"largest gRPC request message in bytes, after decompression")
	fs.IntVar(&o.grpc.MaxResults, "max-results-per-request", server.DefaultMaxResults,
		"most results in one Forward request")
	fs.UintVar(&o.maxConcurrentStreams, "max-concurrent-streams", server.DefaultMaxConcurrentStreams,
		"most gRPC calls in flight on one connection")
	fs.UintVar(&o.maxHeaderBytes, "max-header-bytes", server.DefaultMaxHeaderBytes,
		"largest header list of a gRPC call or an HTTP request, in bytes")
	fs.DurationVar(&o.grpc.RequestTimeout, "request-timeout", server.DefaultRequestTimeout,
		"longest time to receive, check and store one gRPC request")
	fs.DurationVar(&o.grpc.HandshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout,
		"longest TLS handshake and HTTP/2 preface of a new gRPC connection")
	fs.DurationVar(&o.grpc.MaxConnectionIdle, "max-connection-idle", server.DefaultMaxConnectionIdle,
		"a gRPC connection without calls for this long is closed")
	fs.IntVar(&o.maxConnections, "max-connections", defaultMaxConnections,
		"most gRPC connections at once; more are closed on accept")
	fs.IntVar(&o.httpMaxConnections, "http-max-connections", defaultHTTPMaxConnections,
		"most HTTP connections at once; more are closed on accept")
	fs.DurationVar(&o.httpReadHeaderTimeout, "http-read-header-timeout", defaultReadHeaderTimeout,
		"longest time to read an HTTP request's headers (and the TLS handshake)")
	fs.DurationVar(&o.httpReadTimeout, "http-read-timeout", defaultHTTPReadTimeout,
		"longest time to read a whole HTTP request")
	fs.DurationVar(&o.httpWriteTimeout, "http-write-timeout", defaultHTTPWriteTimeout,
		"longest time from the end of an HTTP request's headers to the end of its response")
	fs.DurationVar(&o.httpIdleTimeout, "http-idle-timeout", defaultHTTPIdleTimeout,
		"an HTTP keep-alive connection without a request for this long is closed")
	fs.DurationVar(&o.silent.FirstCallTimeout, "first-call-timeout", server.DefaultFirstCallTimeout,
		"a gRPC connection without an authenticated call this long after it was accepted is closed")
	fs.IntVar(&o.silent.MaxSilentPerSource, "max-silent-connections-per-source", server.DefaultMaxSilentPerSource,
		"most gRPC connections from one IP (IPv6: /64) without an authenticated call yet; one more evicts its oldest")
	fs.DurationVar(&o.httpSilent.FirstCallTimeout, "http-first-request-timeout", server.DefaultFirstCallTimeout,
		"an HTTP connection without an authenticated request this long after it was accepted is closed")
	fs.IntVar(&o.httpSilent.MaxSilentPerSource, "http-max-silent-connections-per-source", server.DefaultHTTPMaxSilentPerSource,
		"most HTTP connections from one IP (IPv6: /64) without an authenticated request yet; one more evicts its oldest")
	fs.UintVar(&o.httpMaxConcurrentStreams, "http-max-concurrent-streams", defaultHTTPMaxConcurrentStreams,
		"most requests in flight on one HTTP/2 connection of the fleet view (TLS)")
	fs.Int64Var(&o.grpc.IngestBudget, "ingest-budget", server.DefaultIngestBudget,
		"bytes of memory the gRPC requests being received, decoded and stored may take, server-wide")
	fs.IntVar(&o.grpc.MaxConcurrentQueries, "max-concurrent-queries", server.DefaultMaxConcurrentQueries,
		"most fleet queries (HTTP API and web UI) in flight, server-wide")
	fs.DurationVar(&o.grpc.QueryQueueWait, "query-queue-wait", server.DefaultQueryQueueWait,
		"longest a fleet query waits for a free query slot before it is answered 503")
	fs.DurationVar(&o.grpc.QueryTimeout, "query-timeout", server.DefaultQueryTimeout,
		"longest a fleet query may run in the database")
	fs.IntVar(&o.grpc.MaxWriteConns, "db-max-write-conns", server.DefaultMaxWriteConns,
		"most PostgreSQL connections storing requests at once (SQLite has one writer)")
	fs.IntVar(&o.grpc.AuthFailures, "auth-failures-per-minute", server.DefaultAuthFailures,
		"failed sign-ins and wrong tokens one address may make on the HTTP listener per minute, then 429")
}

// connLimits are the limits of the gRPC listener (grpc) or of the HTTP one.
func (o *limitOptions) connLimits(grpc bool) server.ConnLimits {
	if grpc {
		l := o.silent
		l.Max = o.maxConnections
		return l
	}
	l := o.httpSilent
	l.Max = o.httpMaxConnections
	return l
}

// validate refuses limits that are not positive: zero would not mean "no limit".
func (o *limitOptions) validate() error {
	errs := positive([]flagValue{
		{"max-recv-msg-size", int64(o.grpc.MaxRecvMsgSize)},
		{"max-results-per-request", int64(o.grpc.MaxResults)},
		{"request-timeout", int64(o.grpc.RequestTimeout)},
		{"handshake-timeout", int64(o.grpc.HandshakeTimeout)},
		{"max-connection-idle", int64(o.grpc.MaxConnectionIdle)},
		{"max-connections", int64(o.maxConnections)},
		{"http-max-connections", int64(o.httpMaxConnections)},
		{"http-read-header-timeout", int64(o.httpReadHeaderTimeout)},
		{"http-read-timeout", int64(o.httpReadTimeout)},
		{"http-write-timeout", int64(o.httpWriteTimeout)},
		{"http-idle-timeout", int64(o.httpIdleTimeout)},
		{"first-call-timeout", int64(o.silent.FirstCallTimeout)},
		{"max-silent-connections-per-source", int64(o.silent.MaxSilentPerSource)},
		{"http-first-request-timeout", int64(o.httpSilent.FirstCallTimeout)},
		{"http-max-silent-connections-per-source", int64(o.httpSilent.MaxSilentPerSource)},
		{"ingest-budget", o.grpc.IngestBudget},
		{"max-concurrent-queries", int64(o.grpc.MaxConcurrentQueries)},
		{"query-queue-wait", int64(o.grpc.QueryQueueWait)},
		{"query-timeout", int64(o.grpc.QueryTimeout)},
		{"db-max-write-conns", int64(o.grpc.MaxWriteConns)},
		{"auth-failures-per-minute", int64(o.grpc.AuthFailures)},
	})
	// HTTP/2 carries these in 32-bit settings.
	var httpStreams uint32
	for _, f := range []struct {
		flag string
		v    uint
		to   *uint32
	}{
		{"max-concurrent-streams", o.maxConcurrentStreams, &o.grpc.MaxConcurrentStreams},
		{"max-header-bytes", o.maxHeaderBytes, &o.grpc.MaxHeaderBytes},
		{"http-max-concurrent-streams", o.httpMaxConcurrentStreams, &httpStreams},
	} {
		switch {
		case f.v == 0:
			errs = append(errs, fmt.Errorf("--%s must be positive", f.flag))
		case f.v > math.MaxUint32:
			errs = append(errs, fmt.Errorf("--%s must be at most %d", f.flag, uint32(math.MaxUint32)))
		default:
			*f.to = uint32(f.v)
		}
	}
	if len(errs) == 0 {
		// The flags' figures together: an ingest budget too small for one request is the library's error.
		errs = append(errs, o.grpc.Validate())
	}
	return errors.Join(errs...)
}

// httpServer is the fleet view's server with serve's HTTP limits. HTTP/2 (over TLS) gets its own stream limit:
// Go's default of 250 streams per connection would let one connection run 250 requests at once.
func (o *limitOptions) httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: o.httpReadHeaderTimeout, ReadTimeout: o.httpReadTimeout,
		WriteTimeout: o.httpWriteTimeout, IdleTimeout: o.httpIdleTimeout, MaxHeaderBytes: int(o.grpc.MaxHeaderBytes),
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: int(o.httpMaxConcurrentStreams)}}
}

// flagValue is a limit's flag and its value, for positive.
type flagValue struct {
	flag string
	v    int64
}

// positive refuses the values that are not positive, naming each flag, in their order: zero would not mean
// "no limit".
func positive(values []flagValue) []error {
	var errs []error
	for _, f := range values {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive", f.flag))
		}
	}
	return errs
}
