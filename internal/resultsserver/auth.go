package resultsserver

import (
	"context"
	"crypto/subtle"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

var errUnauthenticated = status.Error(codes.Unauthenticated, "missing or invalid bearer token")

func (s *Server) unaryAuth(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.authenticate(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.authenticate(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// authenticate accepts a request whose "authorization" metadata is "Bearer <token>" with a configured token.
// The same error answers a missing and a wrong token, and the token itself is never logged.
func (s *Server) authenticate(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	if len(values) == 1 {
		if token, ok := bearer(values[0]); ok && s.validToken(token) {
			return nil
		}
	}
	fields := []zap.Field{zap.Int("authorization_values", len(values))}
	if p, ok := peer.FromContext(ctx); ok {
		fields = append(fields, zap.Stringer("peer", p.Addr))
	}
	s.logger.Debug("rejected a request without a valid bearer token", fields...)
	return errUnauthenticated
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
