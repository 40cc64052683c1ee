// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

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
}

func (l Limits) withDefaults() Limits {
	l.MaxRecvMsgSize = orDefault(l.MaxRecvMsgSize, DefaultMaxRecvMsgSize)
	l.MaxResults = orDefault(l.MaxResults, DefaultMaxResults)
	l.MaxConcurrentStreams = orDefault(l.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	l.MaxHeaderBytes = orDefault(l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	l.RequestTimeout = orDefault(l.RequestTimeout, DefaultRequestTimeout)
	l.HandshakeTimeout = orDefault(l.HandshakeTimeout, DefaultHandshakeTimeout)
	l.MaxConnectionIdle = orDefault(l.MaxConnectionIdle, DefaultMaxConnectionIdle)
	return l
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Validate refuses negative limits.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max receive message size", int64(l.MaxRecvMsgSize)}, {"max results", int64(l.MaxResults)},
		{"request timeout", int64(l.RequestTimeout)}, {"handshake timeout", int64(l.HandshakeTimeout)},
		{"max connection idle", int64(l.MaxConnectionIdle)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", f.name))
		}
	}
	return errors.Join(errs...)
}
