// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

type ticketKey struct{}

// admit admits a call to the ingest budget from its InTapHandle, before gRPC reads any of its message; a call
// refused is errBusy (RESOURCE_EXHAUSTED with a retry hint). The client is the token tapCall authenticated the
// call with (its principal in ctx) when the server has tokens, else its source address. The ticket goes with the
// call's context, and is released when the call ends if its handler never ran.
func (s *Server) admit(ctx context.Context) (context.Context, error) {
	var client string
	if p := principalOf(ctx); p != nil {
		client = p.fingerprint
	} else if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		client = sourcePrefix(p.Addr.String()).String()
	}
	t := s.budget.admit(client)
	if t == nil {
		s.metrics.grpcBusy.Add(1)
		return nil, errBusy
	}
	context.AfterFunc(ctx, t.release)
	return context.WithValue(ctx, ticketKey{}, t), nil
}

// registerForwarder serves ResultForwarder with its generated service description but for Forward's handler,
// which decodes the request into a budgetedRequest, so that it is charged its cost before it is decoded, and
// releases the call's share of the budget once the call is answered. The callers' unary interceptors run as
// they would around the generated handler.
func (s *Server) registerForwarder(gs *grpc.Server) {
	f := &forwarder{s: s}
	desc := pb.ResultForwarder_ServiceDesc
	forward := desc.Methods[0]
	forward.Handler = func(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		t, _ := ctx.Value(ticketKey{}).(*budgetTicket)
		if t != nil {
			defer t.release()
		}
		m := &budgetedRequest{ctx: ctx, ticket: t}
		if err := dec(m); err != nil {
			if m.err != nil {
				return nil, m.err
			}
			return nil, err
		}
		handler := func(ctx context.Context, req any) (any, error) { return f.Forward(ctx, req.(*pb.ForwardRequest)) }
		if interceptor == nil {
			return handler(ctx, &m.req)
		}
		return interceptor(ctx, &m.req, &grpc.UnaryServerInfo{Server: f, FullMethod: pb.ResultForwarder_Forward_FullMethodName}, handler)
	}
	desc.Methods = []grpc.MethodDesc{forward}
	gs.RegisterService(&desc, f)
}

// budgetedRequest is what Forward's handler decodes a message into: requestCodec charges the call's ticket the
// request's cost before it decodes it into req.
type budgetedRequest struct {
	ctx    context.Context
	ticket *budgetTicket
	req    pb.ForwardRequest
	// err is why the charge failed (the call's time ran out waiting for the budget); gRPC reports a codec's
	// errors as INTERNAL, this is the call's real status.
	err error
}

// charge makes the ticket hold cost, waiting for the budget as long as the call may run.
func (r *budgetedRequest) charge(cost int64) error {
	if r.ticket == nil {
		return nil
	}
	if err := r.ticket.resize(r.ctx, cost); err != nil {
		r.err = status.FromContextError(err).Err()
		return r.err
	}
	return nil
}
