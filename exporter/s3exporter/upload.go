// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// multipartConcurrency bounds the parts in flight of one multipart upload. The object is already in memory,
// so parallel parts cost connections, not buffers.
const multipartConcurrency = 4

// uploader puts objects into the bucket: one PutObject, or a multipart upload above the threshold.
type uploader struct {
	client    *s3.Client
	threshold int64
	partSize  int64
	cfg       *S3UploaderConfig
}

// newUploader builds the S3 client from the SDK's default chain (environment, shared config, web identity/IRSA,
// container and instance roles). The SDK's own retries are off: an attempt that fails returns to exporterhelper
// at once, so retry_on_failure and the queue are the one place that decides about retrying, and a permanent
// error costs exactly one request.
func newUploader(ctx context.Context, cfg *Config, httpClient config.HTTPClient, wrap func(s3.HTTPClient) s3.HTTPClient) (*uploader, error) {
	u := &cfg.S3Uploader
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(u.region()), config.WithHTTPClient(httpClient))
	if err != nil {
		return nil, err
	}
	if u.RoleARN != "" {
		provider := stscreds.NewAssumeRoleProvider(sts.NewFromConfig(awsCfg), u.RoleARN,
			func(o *stscreds.AssumeRoleOptions) { o.RoleSessionName = "otelcol-policy-s3-exporter" })
		awsCfg.Credentials = aws.NewCredentialsCache(provider)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if u.Endpoint != "" {
			o.BaseEndpoint = aws.String(u.Endpoint)
		}
		o.UsePathStyle = u.S3ForcePathStyle
		o.RetryMaxAttempts = 1
		if wrap != nil {
			o.HTTPClient = wrap(o.HTTPClient)
		}
	})
	return &uploader{client: client, threshold: cfg.MultipartThreshold, partSize: cfg.MultipartPartSize, cfg: u}, nil
}

func (u *uploader) put(ctx context.Context, key string, body []byte, f *objectFormat) error {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(u.cfg.S3Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(f.contentType),
	}
	if f.contentEncoding != "" {
		in.ContentEncoding = aws.String(f.contentEncoding)
	}
	if u.cfg.StorageClass != "" {
		in.StorageClass = types.StorageClass(u.cfg.StorageClass)
	}
	if u.cfg.ServerSideEncryption != "" {
		in.ServerSideEncryption = types.ServerSideEncryption(u.cfg.ServerSideEncryption)
	}
	if u.cfg.SSEKMSKeyID != "" {
		in.SSEKMSKeyId = aws.String(u.cfg.SSEKMSKeyID)
	}
	if int64(len(body)) <= u.threshold || int64(len(body)) <= u.partSize {
		_, err := u.client.PutObject(ctx, in)
		return err
	}
	return u.putMultipart(ctx, in, body)
}

// putMultipart uploads body in parts, with a CRC32 checksum per part that S3 checks again on completion. A
// failed upload is aborted, so no orphaned parts accrue storage costs; the retry starts it over.
func (u *uploader) putMultipart(ctx context.Context, in *s3.PutObjectInput, body []byte) error {
	created, err := u.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: in.Bucket, Key: in.Key, ContentType: in.ContentType, ContentEncoding: in.ContentEncoding,
		StorageClass: in.StorageClass, ServerSideEncryption: in.ServerSideEncryption, SSEKMSKeyId: in.SSEKMSKeyId,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return err
	}
	parts, err := u.uploadParts(ctx, in, created.UploadId, body)
	if err == nil {
		_, err = u.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: in.Bucket, Key: in.Key, UploadId: created.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
	}
	if err != nil {
		// The abort must run even when ctx is what failed.
		abortCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if _, abortErr := u.client.AbortMultipartUpload(abortCtx, &s3.AbortMultipartUploadInput{
			Bucket: in.Bucket, Key: in.Key, UploadId: created.UploadId,
		}); abortErr != nil {
			err = errors.Join(err, fmt.Errorf("aborting multipart upload %s: %w", aws.ToString(created.UploadId), abortErr))
		}
		return err
	}
	return nil
}

// abortTimeout bounds the clean-up of a failed multipart upload.
const abortTimeout = 10 * time.Second

func (u *uploader) uploadParts(ctx context.Context, in *s3.PutObjectInput, uploadID *string, body []byte) ([]types.CompletedPart, error) {
	n := (int64(len(body)) + u.partSize - 1) / u.partSize
	parts := make([]types.CompletedPart, n)
	errs := make([]error, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, multipartConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		chunk := body[i*u.partSize : min((i+1)*u.partSize, int64(len(body)))]
		number := aws.Int32(int32(i + 1))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out, err := u.client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: in.Bucket, Key: in.Key, UploadId: uploadID, PartNumber: number,
				Body: bytes.NewReader(chunk), ContentLength: aws.Int64(int64(len(chunk))),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
			})
			if err != nil {
				errs[i] = err
				cancel() // the other parts are wasted work now
				return
			}
			parts[i] = types.CompletedPart{PartNumber: number, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}
		})
	}
	wg.Wait()
	// The first part's error rather than a later part's "context canceled".
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return parts, nil
}
