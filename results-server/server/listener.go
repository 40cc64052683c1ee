// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/stats"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
)

// Defaults of ConnLimits beyond the number of connections, which the command sets per listener.
const (
	// A collector's exporter connects when it has a request to send, and a browser when it has a page to ask:
	// both prove their connection within a round trip or two of the handshake.
	DefaultFirstCallTimeout = 10 * time.Second
	// Collectors behind one address (a NAT, a proxy) connect one by one, and prove their connections at once.
	DefaultMaxSilentPerSource     = 128
	DefaultHTTPMaxSilentPerSource = 32
)

// ConnLimits bound the connections of one listener. A connection is silent until it carries an authenticated
// call (gRPC) or request (HTTP), or any call or request when the server has no tokens; silent connections give
// way to new ones (pkg/connlimit).
type ConnLimits struct {
	// Max is the most connections at once. When they are all authenticated, one more is closed as it comes,
	// counted in results_server_connections_refused_total{listener}; otherwise it takes the place of the oldest
	// silent connection of the source with the most, counted in
	// results_server_silent_connections_closed_total{listener, reason="evicted"}.
	Max int
	// MaxSilentPerSource is the most silent connections from one remote IP (IPv6: /64) at once; one more takes
	// the place of that source's oldest silent connection (evicted).
	MaxSilentPerSource int
	// FirstCallTimeout closes a connection still silent this long after its accept (reason="timeout"): it
	// covers the TLS handshake, the HTTP/2 preface and the first call or request.
	FirstCallTimeout time.Duration
}

// LimitListener serves the connections of l within lim, name naming the listener in the metrics. The
// listener's connections are proved by the server's token checks (tapCall, HTTPHandler); an HTTP server must
// have ConnContext set to connlimit.WithConn for its requests to find their connection.
func (s *Server) LimitListener(l net.Listener, name Listener, lim ConnLimits) net.Listener {
	cl := connlimit.New(l, connlimit.Config{Max: lim.Max, MaxSilentPerSource: lim.MaxSilentPerSource,
		SilentTimeout: lim.FirstCallTimeout, Closed: func(r connlimit.Reason) { s.metrics.connectionClosed(name, r) }})
	if name == ListenerGRPC {
		s.grpcConns.add(cl)
	}
	return cl
}

// limitedListeners are the gRPC listeners of a server: a gRPC server tells its stats handlers a connection's
// address, not the connection, so each call finds its connection by address among them.
type limitedListeners struct {
	mu sync.Mutex
	ls []*connlimit.Listener
}

func (g *limitedListeners) add(l *connlimit.Listener) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ls = append(g.ls, l)
}

// TagConn gives a gRPC connection's context its limited connection, once per connection, so that tapCall proves
// it with an atomic load once it was proved.
func (g *limitedListeners) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	g.mu.Lock()
	ls := g.ls
	g.mu.Unlock()
	for _, l := range ls {
		if tagged, ok := l.WithRemote(ctx, info.RemoteAddr); ok {
			return tagged
		}
	}
	return ctx
}

func (g *limitedListeners) HandleConn(context.Context, stats.ConnStats) {}

func (g *limitedListeners) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

func (g *limitedListeners) HandleRPC(context.Context, stats.RPCStats) {}
