// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
)

var (
	errUnauthenticated = status.Error(codes.Unauthenticated, "missing or invalid bearer token")
	errReadOnly        = status.Error(codes.PermissionDenied, "this token may not forward results")
)

// AnyCluster in Token.Write lets a token write every cluster.
const AnyCluster = "*"

// Token is a bearer token and what it may do.
type Token struct {
	// Secret is what clients send ("authorization: Bearer <secret>").
	Secret string
	// Read lets it read the fleet view: the JSON API, the web UI and /metrics.
	Read bool
	// Write are the clusters whose results it may forward, AnyCluster for every one; a token without any may not
	// forward (its calls are PERMISSION_DENIED).
	Write []string
	// Name identifies it in logs, never its secret (the token file names a token by its line).
	Name string
}

// FullAccess is a token that reads and writes every cluster, what every token was before tokens had grants.
func FullAccess(secret string) Token {
	return Token{Secret: secret, Read: true, Write: []string{AnyCluster}}
}

// principal is a configured token as the server checks it.
type principal struct {
	secret   []byte
	name     string
	read     bool
	writeAll bool
	write    map[string]bool
	// fingerprint is how the database records the token's clusters (token_clusters): a hash, so that reading the
	// database does not give a token away.
	fingerprint string

	// clusters are the clusters the token wrote, as token_clusters holds them: loaded on its first request, and
	// again when a request has a cluster not among them (another replica may have added it).
	mu       sync.Mutex
	clusters map[string]bool
}

func (p *principal) canWrite() bool { return p.writeAll || len(p.write) > 0 }

func (p *principal) mayWrite(cluster string) bool { return p.writeAll || p.write[cluster] }

func newPrincipals(tokens []Token) ([]*principal, error) {
	out := make([]*principal, 0, len(tokens))
	seen := map[string]string{}
	for i, t := range tokens {
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("token %d", i+1)
		}
		if err := checkToken(t.Secret); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if first, ok := seen[t.Secret]; ok {
			// Which of its grants would apply?
			return nil, fmt.Errorf("%s repeats %s", name, first)
		}
		seen[t.Secret] = name
		p := &principal{secret: []byte(t.Secret), name: name, read: t.Read, write: map[string]bool{},
			fingerprint: tokenFingerprint(t.Secret)}
		for _, c := range t.Write {
			switch {
			case c == AnyCluster:
				p.writeAll = true
			case c == "" || strings.IndexByte(c, 0) >= 0:
				return nil, fmt.Errorf("%s: a cluster name is empty or holds a NUL", name)
			default:
				p.write[c] = true
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func tokenFingerprint(secret string) string {
	sum := sha256.Sum256([]byte("results-server token\x00" + secret))
	return hex.EncodeToString(sum[:16])
}

type principalKey struct{}

// principalOf is the token a call was authenticated with; nil when the server has no tokens.
func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// tapCall sees every call's headers before gRPC reads any of its message, and before it starts a handler: an
// unauthenticated call is answered UNAUTHENTICATED (trailers only, then RST_STREAM), a token that may only read
// PERMISSION_DENIED, and whatever message its client sends is discarded by the transport as it arrives. So a flood of unauthenticated calls costs a header
// decode each, not a message buffer, a decode and a goroutine, as it would with the check in an interceptor,
// which runs only after the request was read and decoded. (A stream interceptor could check before RecvMsg,
// but only once gRPC has started a handler for the call and given it a stream.)
//
// It also gives every call its deadline, Limits.RequestTimeout, and admits it to the ingest budget (see admit).
//
// gRPC calls it with the connection's lock held: it does nothing but compare tokens, prove the connection (an
// atomic load once it was), start a timer and count.
func (s *Server) tapCall(ctx context.Context, info *tap.Info) (context.Context, error) {
	if len(s.tokens) > 0 {
		p := s.bearerPrincipal(info.Header.Get("authorization"))
		switch {
		case p == nil:
			s.metrics.grpcUnauthenticated.Add(1)
			if ce := s.logger.Check(zap.DebugLevel, "rejected a call without a valid bearer token"); ce != nil {
				fields := []zap.Field{zap.String("method", info.FullMethodName)}
				if p, ok := peer.FromContext(ctx); ok {
					fields = append(fields, zap.Stringer("peer", p.Addr))
				}
				ce.Write(fields...)
			}
			return nil, errUnauthenticated
		case !p.canWrite():
			s.metrics.grpcReadOnly.Add(1)
			s.logger.Debug("refused a call with a token that may only read", zap.String("token", p.name))
			return nil, errReadOnly
		}
		ctx = context.WithValue(ctx, principalKey{}, p)
	}
	// The connection showed a client: it keeps its place when the listener is full (listener.go).
	connlimit.Prove(ctx)
	// The stream's context is the parent: when the call ends, gRPC cancels it, which stops this timer.
	ctx, cancel := context.WithTimeout(ctx, s.limits.RequestTimeout) //nolint:gosec // G118: cancelled with the stream, above
	_ = cancel
	return s.admit(ctx)
}

// authorized accepts exactly one "authorization" value, "Bearer <token>" with a configured token that may
// read (the fleet view's check). The same answer serves a missing and a wrong token, and the token itself is
// never logged.
func (s *Server) authorized(values []string) bool {
	p := s.bearerPrincipal(values)
	return p != nil && p.read
}

// bearerPrincipal is the configured token of exactly one "authorization" value "Bearer <token>", or nil.
func (s *Server) bearerPrincipal(values []string) *principal {
	if len(values) != 1 {
		return nil
	}
	token, ok := bearer(values[0])
	if !ok {
		return nil
	}
	return s.lookupToken(token)
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

// validToken accepts a configured token that may read (the web UI's sign-in).
func (s *Server) validToken(token string) bool {
	p := s.lookupToken(token)
	return p != nil && p.read
}

// lookupToken compares with every configured token, in constant time for each, and does not stop at a match,
// so the time taken tells nothing about which token or how much of it matched.
func (s *Server) lookupToken(token string) *principal {
	t := []byte(token)
	found := -1
	for i, want := range s.tokens {
		found = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(t, want.secret), i, found)
	}
	if found < 0 {
		return nil
	}
	return s.tokens[found]
}
