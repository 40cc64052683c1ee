// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package arrivals reads what reached a destination of the testbed (an S3 bucket, a Kafka topic, the results
// server's database) as item ids, and tallies them against what the collector accepted: lost, foreign,
// duplicated.
package arrivals // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"

import (
	"compress/gzip"
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// BucketReader reads the item ids (LineID) of every object in a bucket. The s3 exporter names an object by the hash
// of its lines, so an object once read never changes: each poll lists the bucket and fetches only new keys.
type BucketReader struct {
	client *s3.Client
	bucket string
	ids    map[string][]string // object key -> item ids of its lines
}

// NewBucketReader reads bucket through client.
func NewBucketReader(client *s3.Client, bucket string) *BucketReader {
	return &BucketReader{client: client, bucket: bucket, ids: map[string][]string{}}
}

// Refresh reads the objects not read yet.
func (r *BucketReader) Refresh(ctx context.Context) error {
	pages := s3.NewListObjectsV2Paginator(r.client, &s3.ListObjectsV2Input{Bucket: aws.String(r.bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing %s: %w", r.bucket, err)
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			if _, ok := r.ids[key]; ok {
				continue
			}
			ids, err := r.read(ctx, key)
			if err != nil {
				return err
			}
			r.ids[key] = ids
		}
	}
	return nil
}

func (r *BucketReader) read(ctx context.Context, key string) ([]string, error) {
	got, err := r.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("getting %s: %w", key, err)
	}
	defer got.Body.Close()
	if !strings.HasSuffix(key, ".jsonl.gz") {
		return nil, fmt.Errorf("object %s is not a gzip JSON lines object", key)
	}
	zr, err := gzip.NewReader(got.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return readLines(key, zr)
}

// Counts returns how many lines carry each decision id, the number of lines, and the number of objects.
func (r *BucketReader) Counts() (perID map[string]int, lines, objects int) {
	perID = map[string]int{}
	for _, ids := range r.ids {
		for _, id := range ids {
			perID[id]++
		}
		lines += len(ids)
	}
	return perID, lines, len(r.ids)
}
