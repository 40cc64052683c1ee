// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"

import (
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// permanentCodes are the gRPC codes a retry of the same request cannot change: the server refused the
// credentials or the request itself, or does not serve the API. Each maps to what an operator should check.
// None of them is a code OTLP retries (TestOTLPRetryableCodesAreRetried): no exporter drops what its protocol
// marks retryable.
// Every other code is retried: UNAVAILABLE (server down, restarting, its database unavailable; also TLS
// handshake failures, which gRPC reports as UNAVAILABLE), RESOURCE_EXHAUSTED (overload, or a message over the
// server's limit), DEADLINE_EXCEEDED, ABORTED, CANCELLED, OUT_OF_RANGE, INTERNAL, UNKNOWN and DATA_LOSS, which
// a server or proxy returns for conditions that pass. The server stores idempotently, so a retry of a request
// that was in fact stored stores nothing twice.
var permanentCodes = map[codes.Code]string{
	codes.Unauthenticated:    "the server refused the credentials: check headers::authorization or the auth extension's token",
	codes.PermissionDenied:   "the credentials may not forward results",
	codes.InvalidArgument:    "the server refused the request as invalid",
	codes.Unimplemented:      "the endpoint does not serve policyresults.v1.ResultForwarder, or not with the configured compression",
	codes.FailedPrecondition: "the server refused the request",
	codes.AlreadyExists:      "the server refused the request",
	codes.NotFound:           "the endpoint does not serve policyresults.v1.ResultForwarder",
}

// classification says what to do with the error of a Forward call.
type classification struct {
	permanent bool
	// what explains a permanent error to an operator.
	what string
	// delay is the server's RetryInfo, how long to wait before retrying.
	delay time.Duration
}

// classify sorts the error of a Forward call: permanent for the codes above; retryable otherwise, after the
// server's RetryInfo when it sent one.
func classify(err error) classification {
	st := status.Convert(err)
	if what, ok := permanentCodes[st.Code()]; ok {
		return classification{permanent: true, what: what}
	}
	return classification{delay: retryDelay(st)}
}

// retryDelay is the RetryInfo of a status, 0 without one.
func retryDelay(st *status.Status) time.Duration {
	for _, detail := range st.Details() {
		if ri, ok := detail.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// Values of the reason attribute of exporter_results_grpc_rejections.
const (
	reasonKeyMismatch  = "key_mismatch"
	reasonIDMismatch   = "id_mismatch"
	reasonMissingField = "missing_field"
	reasonOther        = "other"
)

// rejectionClass sorts the server's free-text reason into a few classes for the metric, after the reference
// server's reasons (results-server/server): "key does not match …", "id does not match …", "… is missing",
// "result is empty". Any other server's reasons count as other; the log keeps the text.
func rejectionClass(reason string) string {
	switch {
	case strings.HasPrefix(reason, "key does not match"):
		return reasonKeyMismatch
	case strings.HasPrefix(reason, "id does not match"):
		return reasonIDMismatch
	case strings.Contains(reason, " is missing"), strings.Contains(reason, " is empty"):
		return reasonMissingField
	}
	return reasonOther
}
