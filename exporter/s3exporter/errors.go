// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/collector/consumer/consumererror"
)

// sdkRetryables is the classifier of the SDK's standard retryer, the protocol's own word on what a retry can get
// past. It is asked first, so that whatever the SDK would retry is retried here, including what only the SDK can
// tell: a signature error its retry middleware recognized as clock skew (a later attempt signs with the corrected
// clock), a 5xx whatever its code, and the codes later SDK releases add. Its "not retryable" decides nothing on
// its own: it says so for cancellations and unknown hosts, which a later attempt can get past.
var sdkRetryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// retryableCodes are S3 error codes, on top of the SDK's lists, that a later attempt can get past whatever their
// HTTP status: S3 answers ExpiredToken with 400, for one.
var retryableCodes = map[string]bool{
	"TooManyRequests":      true,
	"ServiceUnavailable":   true,
	"InternalError":        true,
	"RequestTimeTooSkewed": true, // the SDK corrects its clock offset from the response
	"ExpiredToken":         true, // the credentials cache fetches new ones
	"OperationAborted":     true, // a conflicting operation on the bucket is in progress
	"BadDigest":            true, // the body was damaged on its way
	"IncompleteBody":       true,
	// The bucket is routinely created after the collector starts, by an operator (Crossplane, Terraform, a
	// GitOps sync), as the kafka exporter's topics are; retry_on_failure::max_elapsed_time and the queue bound
	// the wait for it.
	"NoSuchBucket": true,
	// The multipart upload went away under us (aborted by someone else, or by a lifecycle rule): the retry
	// starts a new one.
	"NoSuchUpload":              true,
	"XAmzContentSHA256Mismatch": true,
	// MinIO's answer (HTTP 499) to a request in flight while it shuts down: the server gave up on the request,
	// not the client, who is still waiting. Found by the testbed's outage test, where it dropped a batch.
	"ClientDisconnected":             true,
	"XMinioServerNotInitialized":     true,
	"XMinioStorageFull":              true,
	"XMinioAdminBucketQuotaExceeded": true,
}

// permanentCodes will fail the same way on every attempt until someone changes the bucket's policy, the
// credentials or the configuration, and the SDK does not retry them. The 4xx rule below covers them too; naming
// them keeps the intent readable and the list testable.
var permanentCodes = map[string]bool{
	"AccessDenied":                 true,
	"AllAccessDisabled":            true,
	"InvalidAccessKeyId":           true,
	"SignatureDoesNotMatch":        true, // unless the SDK saw clock skew, see sdkRetryables
	"InvalidBucketName":            true,
	"InvalidArgument":              true,
	"InvalidRequest":               true,
	"InvalidStorageClass":          true,
	"KeyTooLongError":              true,
	"EntityTooLarge":               true,
	"KMS.NotFoundException":        true,
	"KMS.DisabledException":        true,
	"AuthorizationHeaderMalformed": true,
}

// classify turns an upload error into the error exporterhelper acts on: a permanent error for answers that no
// retry can change (the object's records are dropped and counted), the error as is for everything else
// (throttling, server errors, network failures, timeouts, a missing bucket), which retry_on_failure and the
// queue retry.
func classify(err error, bucket, key string) error {
	code, status := "", 0
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	var httpErr interface{ HTTPStatusCode() int }
	if errors.As(err, &httpErr) {
		status = httpErr.HTTPStatusCode()
	}
	if !isPermanent(err, code, status) {
		return fmt.Errorf("uploading s3://%s/%s: %w", bucket, key, err)
	}
	return consumererror.NewPermanent(fmt.Errorf(
		"uploading s3://%s/%s failed with %s (HTTP %d), which retrying cannot fix; the object's records are dropped: %w",
		bucket, key, code, status, err))
}

// statusClientClosedRequest (nginx's 499, also MinIO's for ClientDisconnected) says the server stopped waiting
// for the request; the client got an answer, so the connection was fine, and a new attempt can succeed.
const statusClientClosedRequest = 499

func isPermanent(err error, code string, status int) bool {
	switch {
	case sdkRetryables.IsErrorRetryable(err) == aws.TrueTernary:
		return false
	case retryableCodes[code]:
		return false
	case permanentCodes[code]:
		return true
	case status == 0: // no answer: network error, timeout, cancellation
		return false
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == statusClientClosedRequest:
		return false
	case status >= 400 && status < 500:
		return true
	}
	return false
}
