// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// Reasons of results_server_requests_refused_total.
const (
	reasonUnauthenticated = "unauthenticated"
	reasonTooManyResults  = "too_many_results"
	reasonReadOnly        = "read_only"
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
	grpcReadOnly, grpcBusy, httpBusy, httpAuthRate               atomic.Uint64

	connectionsRefused [numListeners]atomic.Uint64
	// silentClosed counts connections closed before they were proved (listener.go), by silentReasons.
	silentClosed [numListeners][len(silentReasons)]atomic.Uint64
	// calls counts ended gRPC calls by status code; calls refused before they started (unauthenticated) are
	// only in the refused counter.
	calls              [codes.Unauthenticated + 1]atomic.Uint64
	accepted, rejected atomic.Uint64
	ingest             ingestMetrics
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
	p("results_server_requests_refused_total{api=\"grpc\",reason=%q} %d\n", reasonReadOnly, m.grpcReadOnly.Load())
	p("results_server_requests_refused_total{api=\"http\",reason=%q} %d\n", reasonUnauthenticated, m.httpUnauthenticated.Load())
	p("results_server_requests_refused_total{api=\"grpc\",reason=%q} %d\n", reasonBusy, m.grpcBusy.Load())
	p("results_server_requests_refused_total{api=\"http\",reason=%q} %d\n", reasonBusy, m.httpBusy.Load())
	p("results_server_requests_refused_total{api=\"http\",reason=%q} %d\n", reasonAuthRate, m.httpAuthRate.Load())
	p("# HELP results_server_connections_refused_total Connections closed on accept because the listener had its maximum of connections, all of them authenticated.\n")
	p("# TYPE results_server_connections_refused_total counter\n")
	for l := range numListeners {
		p("results_server_connections_refused_total{listener=%q} %d\n", l, m.connectionsRefused[l].Load())
	}
	p("# HELP results_server_silent_connections_closed_total Connections closed before their first authenticated call or request: evicted for a new connection, or at the first call timeout.\n")
	p("# TYPE results_server_silent_connections_closed_total counter\n")
	for l := range numListeners {
		for i, r := range silentReasons {
			p("results_server_silent_connections_closed_total{listener=%q,reason=%q} %d\n", l, r, m.silentClosed[l][i].Load())
		}
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
	m.ingest.write(p)
	p("# HELP results_server_pruned_rows_total Rows the retention deleted, by table.\n")
	p("# TYPE results_server_pruned_rows_total counter\n")
	p("results_server_pruned_rows_total{table=%q} %d\n", store.HistoryTable, m.prunedHistory.Load())
	p("results_server_pruned_rows_total{table=%q} %d\n", store.ResultsTable, m.prunedResolved.Load())
	p("# HELP results_server_prune_failures_total Prunes of a table that failed; the next prune tries again.\n")
	p("# TYPE results_server_prune_failures_total counter\n")
	p("results_server_prune_failures_total %d\n", m.pruneFailures.Load())
	return err
}

// silentReasons are the reasons of results_server_silent_connections_closed_total.
var silentReasons = [...]string{"evicted", "timeout"}

// connectionClosed counts a connection the listener's limits closed.
func (m *metrics) connectionClosed(l Listener, r connlimit.Reason) {
	switch r {
	case connlimit.Refused:
		m.connectionsRefused[l].Add(1)
	case connlimit.Evicted:
		m.silentClosed[l][0].Add(1)
	case connlimit.TimedOut:
		m.silentClosed[l][1].Add(1)
	}
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
