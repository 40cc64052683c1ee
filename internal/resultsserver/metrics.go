// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// Reasons of results_server_requests_refused_total.
const (
	reasonUnauthenticated = "unauthenticated"
	reasonTooManyResults  = "too_many_results"
	// reasonBusy: a gRPC request beyond the ingest budget, or a fleet query beyond the query slots.
	reasonBusy = "busy"
	// reasonAuthRate: an HTTP request from a source address past its failed authentications.
	reasonAuthRate = "auth_rate"
)

// Listener names a listener in results_server_connections_refused_total.
type Listener int

const (
	ListenerGRPC Listener = iota
	ListenerHTTP
	numListeners
)

func (l Listener) String() string { return [...]string{"grpc", "http"}[l] }

// metrics are the server's self-metrics, served in the Prometheus text format at GET /metrics of the HTTP
// listener. Every series exists from the start, at 0.
type metrics struct {
	grpcUnauthenticated, grpcTooManyResults, httpUnauthenticated atomic.Uint64
	grpcBusy, httpBusy, httpAuthRate                             atomic.Uint64

	connectionsRefused [numListeners]atomic.Uint64
	// calls counts ended gRPC calls by status code; calls refused before they started (unauthenticated) are
	// only in the refused counter.
	calls              [codes.Unauthenticated + 1]atomic.Uint64
	accepted, rejected atomic.Uint64
	// prunedHistory and prunedResolved count rows the retention deleted; pruneFailures, prunes of a table that
	// failed.
	prunedHistory, prunedResolved, pruneFailures atomic.Uint64
}

func (m *metrics) write(w io.Writer) error {
	var err error
	p := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	p("# HELP results_server_requests_refused_total Requests refused before their message was decoded or their query run, by reason.\n")
	p("# TYPE results_server_requests_refused_total counter\n")
	p("results_server_requests_refused_total{api=\"grpc\",reason=%q} %d\n", reasonUnauthenticated, m.grpcUnauthenticated.Load())
	p("results_server_requests_refused_total{api=\"grpc\",reason=%q} %d\n", reasonTooManyResults, m.grpcTooManyResults.Load())
	p("results_server_requests_refused_total{api=\"http\",reason=%q} %d\n", reasonUnauthenticated, m.httpUnauthenticated.Load())
	p("results_server_requests_refused_total{api=\"grpc\",reason=%q} %d\n", reasonBusy, m.grpcBusy.Load())
	p("results_server_requests_refused_total{api=\"http\",reason=%q} %d\n", reasonBusy, m.httpBusy.Load())
	p("results_server_requests_refused_total{api=\"http\",reason=%q} %d\n", reasonAuthRate, m.httpAuthRate.Load())
	p("# HELP results_server_connections_refused_total Connections closed on accept because the listener had its maximum of connections.\n")
	p("# TYPE results_server_connections_refused_total counter\n")
	for l := range numListeners {
		p("results_server_connections_refused_total{listener=%q} %d\n", l, m.connectionsRefused[l].Load())
	}
	p("# HELP results_server_grpc_calls_total Ended gRPC calls by status code.\n")
	p("# TYPE results_server_grpc_calls_total counter\n")
	for c := range m.calls {
		p("results_server_grpc_calls_total{code=%q} %d\n", codes.Code(c), m.calls[c].Load())
	}
	p("# HELP results_server_results_total Forwarded results stored (accepted) or refused (rejected).\n")
	p("# TYPE results_server_results_total counter\n")
	p("results_server_results_total{outcome=\"accepted\"} %d\n", m.accepted.Load())
	p("results_server_results_total{outcome=\"rejected\"} %d\n", m.rejected.Load())
	p("# HELP results_server_pruned_rows_total Rows the retention deleted, by table.\n")
	p("# TYPE results_server_pruned_rows_total counter\n")
	p("results_server_pruned_rows_total{table=%q} %d\n", historyPrune.table, m.prunedHistory.Load())
	p("results_server_pruned_rows_total{table=%q} %d\n", resolvedPrune.table, m.prunedResolved.Load())
	p("# HELP results_server_prune_failures_total Prunes of a table that failed; the next prune tries again.\n")
	p("# TYPE results_server_prune_failures_total counter\n")
	p("results_server_prune_failures_total %d\n", m.pruneFailures.Load())
	return err
}

// callCounter is the gRPC stats handler that counts ended calls by code.
type callCounter struct{ m *metrics }

func (c callCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (c callCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	if end, ok := s.(*stats.End); ok {
		if code := status.Code(end.Error); int(code) < len(c.m.calls) {
			c.m.calls[code].Add(1)
		}
	}
}

func (c callCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (c callCounter) HandleConn(context.Context, stats.ConnStats) {}
