// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package miniotest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerKeepsDataAcrossRestart(t *testing.T) {
	s := Start(t)
	s.CreateBucket("bkt")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("hello"),
		ServerSideEncryption: types.ServerSideEncryptionAes256,
	})
	require.NoError(t, err)

	s.Restart()
	out, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	require.NoError(t, err)
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(body))
	assert.Equal(t, types.ServerSideEncryptionAes256, out.ServerSideEncryption)
}

func TestReadOnlyUserCannotWrite(t *testing.T) {
	s := Start(t)
	s.CreateBucket("bkt")
	s.CreateUser("reader", "reader-secret-123", "readonly")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x")})
	require.NoError(t, err)
	reader := s.ClientFor("reader", "reader-secret-123")
	// MinIO's readonly policy grants s3:GetObject (not s3:ListBucket).
	out, err := reader.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	require.NoError(t, err)
	out.Body.Close()
	_, err = reader.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x")})
	var apiErr smithy.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, "AccessDenied", apiErr.ErrorCode())
}
