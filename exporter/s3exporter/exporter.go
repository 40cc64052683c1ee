// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/logsubset"
)

type logsExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	layout    *keyLayout
	format    *objectFormat

	// wrapClient lets tests observe the S3 requests.
	wrapClient func(s3.HTTPClient) s3.HTTPClient
	mu         sync.Mutex
	transports []*http.Transport
	uploader   *uploader
}

func newLogsExporter(cfg *Config, set exporter.Settings) (*logsExporter, error) {
	f, err := newFormat(cfg)
	if err != nil {
		return nil, err
	}
	layout, err := newKeyLayout(cfg, f.ext)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &logsExporter{cfg: cfg, logger: set.Logger, telemetry: tb, layout: layout, format: f}, nil
}

func (e *logsExporter) start(ctx context.Context, _ component.Host) error {
	// The SDK's buildable client, unlike a plain http.Client, takes AWS_CA_BUNDLE and the shared config's
	// ca_bundle into its transport. The SDK clones it for its credential clients, so every transport built is
	// remembered, to close its idle connections at shutdown.
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 16
		e.addTransport(tr)
	})
	u, err := newUploader(ctx, e.cfg, httpClient, e.wrapClient)
	if err != nil {
		return err
	}
	e.uploader = u
	return nil
}

func (e *logsExporter) addTransport(tr *http.Transport) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.transports = append(e.transports, tr)
}

// partition is the part of a batch that goes into one object.
type partition struct {
	path string
	locs []logsubset.Location
}

// consumeLogs writes one object per partition of the batch and returns once all are stored, or failed. An
// object that fails permanently (the store refuses it for good, such as a prefix the credentials may not write
// to) drops its own records only, and the other objects are still uploaded. An object that fails with a
// retryable error (the store is down, slow or throttling) stops the upload there, as the next objects would
// most likely fail the same way: its records and those of the objects not yet uploaded are handed back for
// retry (consumererror.NewLogs), the objects already stored are not uploaded again. A retry groups the same
// records into the same partitions, so it writes the same keys.
func (e *logsExporter) consumeLogs(ctx context.Context, ld plog.Logs) error {
	parts := e.split(ctx, ld)
	n := ld.LogRecordCount()
	var buf objectBuffers
	var dropped droppedObjects
	stored := 0
	for i, p := range parts {
		body, sum, err := e.format.encode(&buf, ld, p.locs)
		if err != nil {
			// The same records would fail the same way on every attempt.
			dropped.add(fmt.Errorf("encoding the object of %d records under %s: %w", len(p.locs), p.path, err), len(p.locs))
			continue
		}
		key := e.layout.key(p.path, sum)
		if err = e.uploader.put(ctx, key, body, e.format); err == nil {
			stored += len(p.locs)
			e.telemetry.ExporterS3Objects.Add(ctx, 1)
			e.telemetry.ExporterS3Bytes.Add(ctx, int64(len(body)))
			e.logger.Debug("Uploaded object", zap.String("key", key), zap.Int("bytes", len(body)), zap.Int("records", len(p.locs)))
			continue
		}
		err = classify(err, e.cfg.S3Uploader.S3Bucket, key)
		if consumererror.IsPermanent(err) {
			dropped.add(errors.Unwrap(err), len(p.locs)) // unwrapped: the batch's error is made permanent once, below
			continue
		}
		e.countRecords(ctx, stored, dropped.records)
		return e.retry(ctx, ld, parts[i:], n, err, &dropped)
	}
	e.countRecords(ctx, stored, dropped.records)
	if dropped.records > 0 {
		return consumererror.NewPermanent(fmt.Errorf("%d of %d records dropped: %w", dropped.records, n, dropped.join()))
	}
	return nil
}

func (e *logsExporter) countRecords(ctx context.Context, stored, dropped int) {
	if stored > 0 {
		e.telemetry.ExporterS3Records.Add(ctx, int64(stored), metric.WithAttributes(attribute.String("outcome", "stored")))
	}
	if dropped > 0 {
		e.telemetry.ExporterS3Records.Add(ctx, int64(dropped), metric.WithAttributes(attribute.String("outcome", "permanent_failure")))
	}
}

// retry hands back the records of parts, the failed object and those after it, for exporterhelper to retry.
func (e *logsExporter) retry(ctx context.Context, ld plog.Logs, parts []*partition, n int, err error, dropped *droppedObjects) error {
	var locs []logsubset.Location
	for _, p := range parts {
		locs = append(locs, p.locs...)
	}
	e.telemetry.ExporterS3Records.Add(ctx, int64(len(locs)), metric.WithAttributes(attribute.String("outcome", "retryable_failure")))
	if dropped.records > 0 {
		// exporterhelper sees only the retryable error, so the dropped records are reported here.
		e.logger.Error("Dropping records whose objects the store refused", zap.Int("dropped_records", dropped.records),
			zap.Int("records", n), zap.Error(dropped.join()))
	}
	return consumererror.NewLogs(fmt.Errorf("%d of %d records not stored: %w", len(locs), n, err), logsubset.Subset(ld, locs))
}

// droppedObjects counts the records of the objects that failed permanently and keeps the first few errors.
type droppedObjects struct {
	errs    []error
	records int
}

// maxQuotedErrors bounds the errors quoted in one returned error.
const maxQuotedErrors = 3

func (d *droppedObjects) add(err error, records int) {
	d.records += records
	if len(d.errs) < maxQuotedErrors {
		d.errs = append(d.errs, err)
	}
}

func (d *droppedObjects) join() error { return errors.Join(d.errs...) }

// split groups the records of the batch by partition, in the order partitions first appear and the records'
// order within each, so that the same batch always gives the same objects.
func (e *logsExporter) split(ctx context.Context, ld plog.Logs) []*partition {
	var parts []*partition
	byPath := map[string]*partition{}
	var path []byte
	shortened := 0
	for ri, rl := range ld.ResourceLogs().All() {
		res := rl.Resource()
		for si, sl := range rl.ScopeLogs().All() {
			for li, lr := range sl.LogRecords().All() {
				var short int
				path, short = e.layout.appendPartition(path[:0], res, lr)
				shortened += short
				p, ok := byPath[string(path)]
				if !ok {
					p = &partition{path: string(path)}
					byPath[p.path] = p
					parts = append(parts, p)
				}
				p.locs = append(p.locs, logsubset.Location{RI: ri, SI: si, LI: li})
			}
		}
	}
	if shortened > 0 {
		e.telemetry.ExporterS3ShortenedPartitionValues.Add(ctx, int64(shortened))
	}
	return parts
}

func (e *logsExporter) shutdown(context.Context) error {
	e.mu.Lock()
	for _, tr := range e.transports {
		tr.CloseIdleConnections()
	}
	e.mu.Unlock()
	if e.telemetry != nil {
		e.telemetry.Shutdown()
	}
	return nil
}
