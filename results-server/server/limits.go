// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Limits. A results_grpc exporter on its defaults (1,000 results and at most 4 MiB − 64 KiB per
// request, 10 concurrent requests) stays under every one of them.
const (
	DefaultMaxRecvMsgSize       = 4 << 20
	DefaultMaxResults           = 10000
	DefaultMaxConcurrentStreams = 32
	DefaultMaxHeaderBytes       = 16 << 10
	DefaultRequestTimeout       = time.Minute
	DefaultHandshakeTimeout     = 10 * time.Second
	DefaultMaxConnectionIdle    = 5 * time.Minute
	DefaultIngestBudget         = 64 << 20
	DefaultQueryQueueWait       = time.Second
	DefaultMaxConcurrentQueries = 4
	DefaultQueryTimeout         = 30 * time.Second
	DefaultMaxWriteConns        = 8
	DefaultAuthFailures         = 10
)

// Limits bound what one client of the gRPC API can make the server hold. A zero field takes its default.
//
// An unauthenticated request costs a header decode: its token is checked on the request's headers, before any
// of its message is read (see Server.GRPCServer).
type Limits struct {
	// MaxRecvMsgSize is the largest request message, in bytes, after decompression; a larger one is
	// RESOURCE_EXHAUSTED before it is read.
	MaxRecvMsgSize int
	// MaxResults is the most results one ForwardRequest may hold. Every result costs its decoder a few hundred
	// bytes however small it is on the wire (an empty one is two bytes), so a request over the limit is
	// refused before it is decoded.
	MaxResults int
	// MaxConcurrentStreams is the most calls in flight on one connection (HTTP/2
	// SETTINGS_MAX_CONCURRENT_STREAMS); gRPC clients queue beyond it, the server resets streams of a client
	// that does not.
	MaxConcurrentStreams uint32
	// MaxHeaderBytes bounds a call's metadata (HTTP/2 header list), enforced while it is decoded.
	MaxHeaderBytes uint32
	// RequestTimeout bounds receiving, checking and storing one request; a call still running then is
	// DEADLINE_EXCEEDED (or CANCELLED), so a client that stops sending cannot hold a call forever.
	RequestTimeout time.Duration
	// HandshakeTimeout bounds a new connection's TLS handshake and HTTP/2 preface.
	HandshakeTimeout time.Duration
	// MaxConnectionIdle closes a connection without calls for this long (GOAWAY; clients reconnect when they
	// need to).
	MaxConnectionIdle time.Duration

	// IngestBudget bounds, server-wide, the memory of the requests being received, decoded and stored, in bytes
	// (see ingestBudget): a request beyond it is RESOURCE_EXHAUSTED with a retry hint before its message is read.
	// It must hold at least one request of MaxRecvMsgSize bytes and MaxResults results.
	IngestBudget int64
	// MaxConcurrentQueries bounds the fleet queries (HTTP API and web UI) in flight server-wide; each holds one
	// read connection of the database. Beyond it a query waits for QueryQueueWait, then is 503 with Retry-After.
	MaxConcurrentQueries int
	// QueryQueueWait is the longest a fleet query waits for a query slot.
	QueryQueueWait time.Duration
	// QueryTimeout bounds one fleet query's work in the database; a query still running then is cancelled and
	// answered 503.
	QueryTimeout time.Duration
	// MaxWriteConns bounds the PostgreSQL connections storing requests at once (SQLite has one writer).
	MaxWriteConns int
	// AuthFailures is how many failed sign-ins and wrong tokens one source address may make on the HTTP
	// listener per minute (and at once); beyond it, its requests are 429 until the minute has passed.
	AuthFailures int
}

func (l Limits) withDefaults() Limits {
	l.MaxRecvMsgSize = orDefault(l.MaxRecvMsgSize, DefaultMaxRecvMsgSize)
	l.MaxResults = orDefault(l.MaxResults, DefaultMaxResults)
	l.MaxConcurrentStreams = orDefault(l.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	l.MaxHeaderBytes = orDefault(l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	l.RequestTimeout = orDefault(l.RequestTimeout, DefaultRequestTimeout)
	l.HandshakeTimeout = orDefault(l.HandshakeTimeout, DefaultHandshakeTimeout)
	l.MaxConnectionIdle = orDefault(l.MaxConnectionIdle, DefaultMaxConnectionIdle)
	l.IngestBudget = orDefault(l.IngestBudget, DefaultIngestBudget)
	l.QueryQueueWait = orDefault(l.QueryQueueWait, DefaultQueryQueueWait)
	l.MaxConcurrentQueries = orDefault(l.MaxConcurrentQueries, DefaultMaxConcurrentQueries)
	l.QueryTimeout = orDefault(l.QueryTimeout, DefaultQueryTimeout)
	l.MaxWriteConns = orDefault(l.MaxWriteConns, DefaultMaxWriteConns)
	l.AuthFailures = orDefault(l.AuthFailures, DefaultAuthFailures)
	return l
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Validate refuses negative limits, and an ingest budget too small for one request of the largest size.
func (l Limits) Validate() error {
	err := notNegative(
		namedValue{"max receive message size", int64(l.MaxRecvMsgSize)}, namedValue{"max results", int64(l.MaxResults)},
		namedValue{"request timeout", int64(l.RequestTimeout)}, namedValue{"handshake timeout", int64(l.HandshakeTimeout)},
		namedValue{"max connection idle", int64(l.MaxConnectionIdle)}, namedValue{"ingest budget", l.IngestBudget},
		namedValue{"query queue wait", int64(l.QueryQueueWait)},
		namedValue{"max concurrent queries", int64(l.MaxConcurrentQueries)},
		namedValue{"query timeout", int64(l.QueryTimeout)}, namedValue{"max write connections", int64(l.MaxWriteConns)},
		namedValue{"auth failures", int64(l.AuthFailures)})
	if err != nil {
		return err
	}
	d := l.withDefaults()
	if most := requestCost(d.MaxRecvMsgSize, d.MaxResults); d.IngestBudget < most {
		return fmt.Errorf("ingest budget %d bytes: want at least %d, what one request of the max receive "+
			"message size (%d bytes) and max results (%d) may cost", d.IngestBudget, most, d.MaxRecvMsgSize, d.MaxResults)
	}
	return nil
}

// namedValue is a setting's name and value, for the errors of notNegative.
type namedValue struct {
	name string
	v    int64
}

// notNegative refuses the negative values, naming each.
func notNegative(values ...namedValue) error {
	var errs []error
	for _, f := range values {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", f.name))
		}
	}
	return errors.Join(errs...)
}
