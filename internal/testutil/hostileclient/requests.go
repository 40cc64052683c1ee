// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package hostileclient is what the results server's attack tests send: a ForwardRequest built to cost its
// decoder the most, sent as raw bytes, and a raw HTTP/2 connection that opens streams the way a hostile
// client does, ignoring the server's SETTINGS. results-server/server and testbed/hostile use it.
package hostileclient // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/hostileclient"

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// ForwardMethod is the full name of the results API's one method.
const ForwardMethod = "/policyresults.v1.ResultForwarder/Forward"

// EmptyResults is an encoded ForwardRequest of size bytes (size even, at least 2) made only of empty results,
// two bytes each: the most objects per byte a decoder can be made to allocate (4 MiB are 2 Mi results).
func EmptyResults(size int) []byte {
	if size < 2 || size%2 != 0 {
		panic(fmt.Sprintf("hostileclient: size %d: want an even number of at least 2", size))
	}
	b := make([]byte, size)
	for i := 0; i < size; i += 2 {
		b[i] = 0x0a // field 1 (results), length-delimited; b[i+1] = 0: an empty Result
	}
	return b
}

// Forward calls ResultForwarder.Forward with msg, an encoded ForwardRequest, as it is: the client never holds
// the decoded request, whatever msg makes a decoder allocate. The response is decoded into resp.
func Forward(ctx context.Context, conn grpc.ClientConnInterface, msg []byte, resp proto.Message, opts ...grpc.CallOption) error {
	return conn.Invoke(ctx, ForwardMethod, rawRequest(msg), resp, append(opts, grpc.ForceCodecV2(rawCodec{}))...)
}

type rawRequest []byte

// rawCodec sends a rawRequest's bytes unchanged and decodes responses as protobuf; its name is "proto", so
// the server sees an ordinary application/grpc request.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	r, ok := v.(rawRequest)
	if !ok {
		return nil, fmt.Errorf("hostileclient: cannot send %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(r)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("hostileclient: cannot decode into %T", v)
	}
	return proto.Unmarshal(data.Materialize(), m)
}

func (rawCodec) Name() string { return "proto" }

var _ encoding.CodecV2 = rawCodec{}
