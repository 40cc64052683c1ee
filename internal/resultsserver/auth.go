// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"context"
	"crypto/subtle"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

var errUnauthenticated = status.Error(codes.Unauthenticated, "missing or invalid bearer token")

// tapCall sees every call's headers before gRPC reads any of its message, and before it starts a handler: an
// unauthenticated call is answered UNAUTHENTICATED (trailers only, then RST_STREAM), and whatever message its
// client sends is discarded by the transport as it arrives. So a flood of unauthenticated calls costs a header
// decode each, not a message buffer, a decode and a goroutine, as it would with the check in an interceptor,
// which runs only after the request was read and decoded. (A stream interceptor could check before RecvMsg,
// but only once gRPC has started a handler for the call and given it a stream.)
//
// It also gives every call its deadline, Limits.RequestTimeout, and admits it to the ingest budget (see admit).
//
// gRPC calls it with the connection's lock held: it does nothing but compare tokens, start a timer and count.
func (s *Server) tapCall(ctx context.Context, info *tap.Info) (context.Context, error) {
	if len(s.tokens) > 0 && !s.authorized(info.Header.Get("authorization")) {
		s.metrics.grpcUnauthenticated.Add(1)
		if ce := s.logger.Check(zap.DebugLevel, "rejected a call without a valid bearer token"); ce != nil {
			fields := []zap.Field{zap.String("method", info.FullMethodName)}
			if p, ok := peer.FromContext(ctx); ok {
				fields = append(fields, zap.Stringer("peer", p.Addr))
			}
			ce.Write(fields...)
		}
		return nil, errUnauthenticated
	}
	// The stream's context is the parent: when the call ends, gRPC cancels it, which stops this timer.
	ctx, cancel := context.WithTimeout(ctx, s.limits.RequestTimeout) //nolint:gosec // G118: cancelled with the stream, above
	_ = cancel
	return s.admit(ctx, info)
}

// authorized accepts exactly one "authorization" value, "Bearer <token>" with a configured token. The same
// answer serves a missing and a wrong token, and the token itself is never logged.
func (s *Server) authorized(values []string) bool {
	if len(values) != 1 {
		return false
	}
	token, ok := bearer(values[0])
	return ok && s.validToken(token)
}

// bearer extracts the token of an RFC 6750 "Bearer" credential; the scheme is case-insensitive.
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// validToken compares with every configured token, in constant time for each, and does not stop at a match,
// so the time taken tells nothing about which token or how much of it matched.
func (s *Server) validToken(token string) bool {
	t := []byte(token)
	match := 0
	for _, want := range s.tokens {
		match |= subtle.ConstantTimeCompare(t, want)
	}
	return match == 1
}
