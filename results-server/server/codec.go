// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"encoding/binary"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// requestCodec is gRPC's protobuf codec with one check before a ForwardRequest is decoded: its results are
// counted on the wire, without allocating, and a request with more than maxResults is refused. Decoding
// allocates a few hundred bytes per result however small the result is on the wire (an empty one is two
// bytes), so the message size alone does not bound what a request costs.
//
// gRPC reports a codec's error as INTERNAL ("grpc: failed to unmarshal the received message: ..."), whatever its
// code; the results_grpc exporter retries it, as it retries RESOURCE_EXHAUSTED for a message over the size limit.
//
// Forward's handler decodes its message into a budgetedRequest (see registerForwarder): the codec counts the
// results on the buffers as received and charges the request's cost to the ingest budget before it builds
// anything, its contiguous copy included.
type requestCodec struct {
	maxResults int
	refused    func()
}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (requestCodec) Name() string { return grpcproto.Name }

func (requestCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	charge := func(int64) error { return nil }
	if br, ok := v.(*budgetedRequest); ok {
		v, charge = &br.req, br.charge
	}
	req, ok := v.(*pb.ForwardRequest)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	n := countResults(data, c.maxResults)
	if n > c.maxResults {
		c.refused()
		return status.Errorf(codes.ResourceExhausted, "more than %d results in one request, the server's limit: send fewer per request", c.maxResults)
	}
	if err := charge(requestCost(data.Len(), n)); err != nil {
		return err
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), req)
}

// countResults counts the results field of an encoded ForwardRequest on its buffers as received, without
// copying them, stopping at max+1 or at the first malformed field (which proto.Unmarshal then reports).
func countResults(data mem.BufferSlice, max int) int {
	r := data.Reader()
	defer r.Close()
	n := 0
	for r.Remaining() > 0 && n <= max {
		tag, err := binary.ReadUvarint(r)
		if err != nil {
			return n
		}
		num, typ := protowire.DecodeTag(tag)
		var skip uint64
		switch typ {
		case protowire.VarintType:
			if _, err := binary.ReadUvarint(r); err != nil {
				return n
			}
			continue
		case protowire.Fixed32Type:
			skip = 4
		case protowire.Fixed64Type:
			skip = 8
		case protowire.BytesType:
			if skip, err = binary.ReadUvarint(r); err != nil {
				return n
			}
		default:
			return n // a group: no field of a ForwardRequest is one
		}
		if skip > uint64(r.Remaining()) { //nolint:gosec // G115: Remaining is never negative
			return n
		}
		_, _ = r.Discard(int(skip))
		if num == 1 && typ == protowire.BytesType {
			n++
		}
	}
	return n
}
