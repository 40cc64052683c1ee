// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
)

// s3Error builds the error the SDK returns for an S3 error response.
func s3Error(status int, code string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "message from S3"},
		},
		RequestID: "req-1",
	}}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"AccessDenied", s3Error(403, "AccessDenied"), true},
		{"AllAccessDisabled", s3Error(403, "AllAccessDisabled"), true},
		{"InvalidAccessKeyId", s3Error(403, "InvalidAccessKeyId"), true},
		{"SignatureDoesNotMatch", s3Error(403, "SignatureDoesNotMatch"), true},
		{"InvalidBucketName", s3Error(400, "InvalidBucketName"), true},
		{"InvalidArgument", s3Error(400, "InvalidArgument"), true},
		{"InvalidStorageClass", s3Error(400, "InvalidStorageClass"), true},
		{"bad request without code", s3Error(400, ""), true},
		{"KMS key not found", s3Error(400, "KMS.NotFoundException"), true},
		{"KMS key disabled", s3Error(400, "KMS.DisabledException"), true},
		{"EntityTooLarge", s3Error(400, "EntityTooLarge"), true},
		{"unknown 4xx", s3Error(405, "MethodNotAllowed"), true},
		{"NoSuchBucket", s3Error(404, "NoSuchBucket"), false},
		{"NoSuchUpload", s3Error(404, "NoSuchUpload"), false},
		{"SlowDown", s3Error(503, "SlowDown"), false},
		{"ServiceUnavailable", s3Error(503, "ServiceUnavailable"), false},
		{"TooManyRequests", s3Error(429, ""), false},
		{"InternalError", s3Error(500, "InternalError"), false},
		{"bad gateway", s3Error(502, ""), false},
		{"RequestTimeout is a 400", s3Error(400, "RequestTimeout"), false},
		{"ExpiredToken is a 400", s3Error(400, "ExpiredToken"), false},
		{"RequestTimeTooSkewed is a 403", s3Error(403, "RequestTimeTooSkewed"), false},
		{"BadDigest", s3Error(400, "BadDigest"), false},
		{"OperationAborted", s3Error(409, "OperationAborted"), false},
		{"MinIO not initialized", s3Error(503, "XMinioServerNotInitialized"), false},
		{"MinIO shutting down: ClientDisconnected", s3Error(499, "ClientDisconnected"), false},
		{"client closed request without code", s3Error(499, ""), false},
		{"connection refused", &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: syscall.ECONNREFUSED}, false},
		{"deadline", context.DeadlineExceeded, false},
		{"canceled, which the SDK does not retry", &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject",
			Err: &smithy.CanceledError{Err: context.Canceled}}, false},
		{"no credentials", errors.New("failed to refresh cached credentials, no EC2 IMDS role found"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := classify(tt.err, "bkt", "p/k.jsonl.gz")
			assert.Equal(t, tt.permanent, consumererror.IsPermanent(err))
			assert.ErrorIs(t, err, tt.err)
			assert.Contains(t, err.Error(), "s3://bkt/p/k.jsonl.gz")
		})
	}
}

// TestSDKRetryablesAreRetried walks the SDK's own lists of retryable and throttling codes and retryable HTTP
// statuses: none may be classed permanent, whatever status a code comes with and whatever code a status comes
// with. A rule that makes one of them permanent again, before or instead of asking the SDK, fails here.
func TestSDKRetryablesAreRetried(t *testing.T) {
	sdkCodes := slices.Sorted(maps.Keys(retry.DefaultRetryableErrorCodes))
	sdkCodes = append(sdkCodes, slices.Sorted(maps.Keys(retry.DefaultThrottleErrorCodes))...)
	require.NotEmpty(t, retry.DefaultRetryableErrorCodes)
	require.NotEmpty(t, retry.DefaultThrottleErrorCodes)
	require.NotEmpty(t, retry.DefaultRetryableHTTPStatusCodes)

	for _, code := range sdkCodes {
		assert.False(t, permanentCodes[code], "%s is in permanentCodes, but the SDK retries it", code)
		for _, status := range []int{400, 403, 404, 409, 429, 500, 503} {
			err := s3Error(status, code)
			require.Equal(t, aws.TrueTernary, sdkRetryables.IsErrorRetryable(err), "the SDK retries %s (HTTP %d)", code, status)
			assert.False(t, consumererror.IsPermanent(classify(err, "bkt", "k")), "%s (HTTP %d) is classed permanent", code, status)
		}
	}

	// A retryable status stays retryable whatever code it carries, even one classed permanent on a 4xx.
	codes := append([]string{"", "SomeFutureCode"}, slices.Sorted(maps.Keys(permanentCodes))...)
	for _, status := range slices.Sorted(maps.Keys(retry.DefaultRetryableHTTPStatusCodes)) {
		for _, code := range codes {
			err := s3Error(status, code)
			require.Equal(t, aws.TrueTernary, sdkRetryables.IsErrorRetryable(err), "the SDK retries HTTP %d (%q)", status, code)
			assert.False(t, consumererror.IsPermanent(classify(err, "bkt", "k")), "HTTP %d (%q) is classed permanent", status, code)
		}
	}
}

// TestPermanentCodesStayPermanent: every code named permanent is permanent on any 4xx, and none is one the SDK
// would retry there.
func TestPermanentCodesStayPermanent(t *testing.T) {
	for _, code := range slices.Sorted(maps.Keys(permanentCodes)) {
		assert.False(t, retryableCodes[code], "%s is both permanent and retryable", code)
		for _, status := range []int{400, 403, 404} {
			err := s3Error(status, code)
			assert.NotEqual(t, aws.TrueTernary, sdkRetryables.IsErrorRetryable(err), "the SDK retries %s (HTTP %d)", code, status)
			assert.True(t, consumererror.IsPermanent(classify(err, "bkt", "k")), "%s (HTTP %d)", code, status)
		}
	}
}

func TestNoSuchBucketIsRetryable(t *testing.T) {
	err := classify(s3Error(404, "NoSuchBucket"), "not-yet", "p/k.jsonl.gz")
	assert.False(t, consumererror.IsPermanent(err), "a bucket an operator has not created yet must not drop batches")
	assert.Contains(t, err.Error(), "uploading s3://not-yet/p/k.jsonl.gz: ")
	assert.Contains(t, err.Error(), "api error NoSuchBucket")
}

// TestClockSkewThroughTheSDK sends a PutObject through the SDK's real middleware to a server that refuses the
// signature. With the server's Date an hour off, the SDK recognizes clock skew and marks the error retryable (its
// next attempt corrects the clock), so it must be retried although SignatureDoesNotMatch is otherwise permanent.
func TestClockSkewThroughTheSDK(t *testing.T) {
	for _, tt := range []struct {
		name      string
		offset    time.Duration
		permanent bool
	}{
		{"server clock an hour ahead", time.Hour, false},
		{"server clock an hour behind", -time.Hour, false},
		{"clocks agree", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Date", time.Now().Add(tt.offset).UTC().Format(http.TimeFormat))
				s3ErrorResponse(w, http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match")
			}))
			defer srv.Close()
			cfg := createDefaultConfig().(*Config)
			cfg.S3Uploader.S3Bucket = "bkt"
			cfg.S3Uploader.Endpoint = srv.URL
			cfg.S3Uploader.S3ForcePathStyle = true
			u, err := newUploader(context.Background(), cfg, awshttp.NewBuildableClient(), nil)
			require.NoError(t, err)

			_, err = u.client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("{}\n"),
			})
			require.Error(t, err)
			got := classify(err, "bkt", "k")
			assert.Equal(t, tt.permanent, consumererror.IsPermanent(got), "%v", got)
			assert.Contains(t, got.Error(), "SignatureDoesNotMatch")
		})
	}
}

func TestPermanentErrorMessage(t *testing.T) {
	err := classify(s3Error(403, "AccessDenied"), "bkt", "p/k.jsonl.gz")
	assert.Equal(t, "Permanent error: uploading s3://bkt/p/k.jsonl.gz failed with AccessDenied (HTTP 403), which retrying cannot fix; "+
		"the object's records are dropped: operation error S3: PutObject, https response error StatusCode: 403, RequestID: req-1, "+
		"api error AccessDenied: message from S3", err.Error())
}
