// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
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
// gRPC reports a codec's error as INTERNAL ("grpc: error unmarshalling request: ..."), whatever its code; the
// results_grpc exporter retries it, as it retries RESOURCE_EXHAUSTED for a message over the size limit.
type requestCodec struct {
	maxResults int
	refused    func()
}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (requestCodec) Name() string { return grpcproto.Name }

func (requestCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.ForwardRequest)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if countResults(b, c.maxResults) > c.maxResults {
		c.refused()
		return status.Errorf(codes.ResourceExhausted, "more than %d results in one request, the server's limit: send fewer per request", c.maxResults)
	}
	return proto.Unmarshal(b, req)
}

// countResults counts the results field of an encoded ForwardRequest, stopping at max+1 or at the first
// malformed field (which proto.Unmarshal then reports).
func countResults(b []byte, max int) int {
	n := 0
	for len(b) > 0 && n <= max {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return n
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return n
		}
		b = b[l:]
		if num == 1 && typ == protowire.BytesType {
			n++
		}
	}
	return n
}
