// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestClassify(t *testing.T) {
	const what = "the server refused the request"
	for _, tt := range []struct {
		code codes.Code
		want classification
	}{
		{codes.Unavailable, classification{}},
		{codes.ResourceExhausted, classification{}},
		{codes.DeadlineExceeded, classification{}},
		{codes.Aborted, classification{}},
		{codes.Canceled, classification{}},
		{codes.Internal, classification{}},
		{codes.Unknown, classification{}},
		{codes.DataLoss, classification{}},
		{codes.OutOfRange, classification{}},
		{codes.Unauthenticated, classification{permanent: true, what: "the server refused the credentials: check headers::authorization or the auth extension's token"}},
		{codes.PermissionDenied, classification{permanent: true, what: "the credentials may not forward results"}},
		{codes.InvalidArgument, classification{permanent: true, what: "the server refused the request as invalid"}},
		{codes.Unimplemented, classification{permanent: true, what: "the endpoint does not serve policyresults.v1.ResultForwarder, or not with the configured compression"}},
		{codes.NotFound, classification{permanent: true, what: "the endpoint does not serve policyresults.v1.ResultForwarder"}},
		{codes.FailedPrecondition, classification{permanent: true, what: what}},
		{codes.AlreadyExists, classification{permanent: true, what: what}},
	} {
		t.Run(tt.code.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, classify(status.Error(tt.code, "server says")))
		})
	}
	// An error that is not a gRPC status (none of gRPC's own calls return one) is retried.
	assert.Equal(t, classification{}, classify(errors.New("boom")))
}

// otlpRetryable are the codes the OTLP specification (OTLP/gRPC "Failures") and core's otlp exporter
// (shouldRetry) retry; OTLP retries RESOURCE_EXHAUSTED only when the server sends RetryInfo, this exporter
// always. Retrying more than OTLP is allowed, dropping more is not.
var otlpRetryable = []codes.Code{
	codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss,
	codes.ResourceExhausted,
}

// TestOTLPRetryableCodesAreRetried: no code OTLP retries is classed permanent, with or without RetryInfo.
func TestOTLPRetryableCodesAreRetried(t *testing.T) {
	for _, code := range otlpRetryable {
		_, listed := permanentCodes[code]
		assert.False(t, listed, "%s is in permanentCodes, but OTLP retries it", code)
		assert.False(t, classify(status.Error(code, "server says")).permanent, "%s", code)
		st, err := status.New(code, "later").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
		require.NoError(t, err)
		assert.Equal(t, classification{delay: time.Second}, classify(st.Err()), "%s", code)
	}
}

func TestClassifyRetryInfo(t *testing.T) {
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Unavailable} {
		st, err := status.New(code, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(7 * time.Second)})
		require.NoError(t, err)
		assert.Equal(t, classification{delay: 7 * time.Second}, classify(st.Err()))
	}
}

func TestRejectionClass(t *testing.T) {
	for reason, want := range map[string]string{
		"key does not match the result's identity":                     reasonKeyMismatch,
		"id does not match the result's identity, outcome and message": reasonIDMismatch,
		"key is missing":  reasonMissingField,
		"id is missing":   reasonMissingField,
		"result is empty": reasonMissingField,
		"cluster is missing: set it on the result or as k8s.cluster.name in extra_metadata": reasonMissingField,
		"a text field contains a NUL character":                                             reasonOther,
		"outcome 9 is unknown to this server":                                               reasonOther,
	} {
		assert.Equal(t, want, rejectionClass(reason), reason)
	}
}
