package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/smithy-go"
	"go.opentelemetry.io/collector/consumer/consumererror"
)

// retryableCodes are S3 error codes that a later attempt can get past, whatever their HTTP status: S3 answers
// RequestTimeout with 400, for one.
var retryableCodes = map[string]bool{
	"SlowDown":                   true,
	"Throttling":                 true,
	"ThrottlingException":        true,
	"RequestLimitExceeded":       true,
	"TooManyRequests":            true,
	"ServiceUnavailable":         true,
	"InternalError":              true,
	"RequestTimeout":             true,
	"RequestTimeTooSkewed":       true, // the SDK corrects its clock offset from the response
	"ExpiredToken":               true, // the credentials cache fetches new ones
	"OperationAborted":           true, // a conflicting operation on the bucket is in progress
	"BadDigest":                  true, // the body was damaged on its way
	"IncompleteBody":             true,
	"XAmzContentSHA256Mismatch":  true,
	"XMinioServerNotInitialized": true,
	// MinIO's answer (HTTP 499) to a request in flight while it shuts down: the server gave up on the request,
	// not the client, who is still waiting. Found by the testbed's outage test, where it dropped a batch.
	"ClientDisconnected":             true,
	"XMinioStorageFull":              true,
	"XMinioAdminBucketQuotaExceeded": true,
}

// permanentCodes will fail the same way on every attempt until someone changes the bucket, the policy or the
// configuration. The 4xx rule below covers them too; naming them keeps the intent readable and the list testable.
var permanentCodes = map[string]bool{
	"NoSuchBucket":                 true,
	"AccessDenied":                 true,
	"AllAccessDisabled":            true,
	"InvalidAccessKeyId":           true,
	"SignatureDoesNotMatch":        true,
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
// retry can change (the batch is dropped and counted as failed), the error as is for everything else
// (throttling, server errors, network failures, timeouts), which retry_on_failure and the queue retry.
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
	if !isPermanent(code, status) {
		return fmt.Errorf("uploading s3://%s/%s: %w", bucket, key, err)
	}
	return consumererror.NewPermanent(fmt.Errorf(
		"uploading s3://%s/%s failed with %s (HTTP %d), which retrying cannot fix; the batch is dropped: %w",
		bucket, key, code, status, err))
}

// statusClientClosedRequest (nginx's 499, also MinIO's for ClientDisconnected) says the server stopped waiting
// for the request; the client got an answer, so the connection was fine, and a new attempt can succeed.
const statusClientClosedRequest = 499

func isPermanent(code string, status int) bool {
	switch {
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
