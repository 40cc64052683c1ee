package s3exporter

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
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
		{"NoSuchBucket", s3Error(404, "NoSuchBucket"), true},
		{"AccessDenied", s3Error(403, "AccessDenied"), true},
		{"InvalidAccessKeyId", s3Error(403, "InvalidAccessKeyId"), true},
		{"SignatureDoesNotMatch", s3Error(403, "SignatureDoesNotMatch"), true},
		{"InvalidArgument", s3Error(400, "InvalidArgument"), true},
		{"bad request without code", s3Error(400, ""), true},
		{"KMS key not found", s3Error(400, "KMS.NotFoundException"), true},
		{"EntityTooLarge", s3Error(400, "EntityTooLarge"), true},
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

func TestPermanentErrorMessage(t *testing.T) {
	err := classify(s3Error(403, "AccessDenied"), "bkt", "p/k.jsonl.gz")
	assert.Equal(t, "Permanent error: uploading s3://bkt/p/k.jsonl.gz failed with AccessDenied (HTTP 403), which retrying cannot fix; "+
		"the batch is dropped: operation error S3: PutObject, https response error StatusCode: 403, RequestID: req-1, "+
		"api error AccessDenied: message from S3", err.Error())
}
