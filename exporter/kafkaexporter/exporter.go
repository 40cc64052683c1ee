// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/logsubset"
)

// maxDistinctErrors bounds the errors quoted in one returned error: a batch of thousands of records failing
// for one reason should read as one error.
const maxDistinctErrors = 3

type logsExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	client    *kgo.Client
	missing   *missingTopics

	refusedLog rateLimit
}

func newLogsExporter(cfg *Config, set exporter.Settings) (*logsExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	missing := newMissingTopics(set.Logger, cfg.Producer.AllowAutoTopicCreation)
	if err := tb.RegisterExporterKafkaMissingTopicRecordsCallback(missing.observe); err != nil {
		return nil, err
	}
	return &logsExporter{cfg: cfg, logger: set.Logger, telemetry: tb, missing: missing}, nil
}

// start creates the client. It does not connect: franz-go connects on the first produce, so a collector starts
// while Kafka is down and its queue holds what arrives meanwhile.
func (e *logsExporter) start(ctx context.Context, _ component.Host) error {
	opts, err := clientOptions(ctx, e.cfg, e.logger)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("creating the Kafka client: %w", err)
	}
	e.client = cl
	return nil
}

func (e *logsExporter) shutdown(context.Context) error {
	if e.client != nil {
		e.client.Close()
	}
	e.telemetry.Shutdown()
	return nil
}

type failure struct {
	loc   logsubset.Location
	topic string
	err   error
}

// consumeLogs produces every record of the batch and returns once Kafka acknowledged all of them or they
// failed. Only the records that failed with a retryable error are handed back for retry (consumererror.Logs),
// so a retry does not produce the acknowledged ones again; records that failed permanently are dropped and
// logged.
func (e *logsExporter) consumeLogs(ctx context.Context, ld plog.Logs) error {
	n := ld.LogRecordCount()
	b := newRecordBuilder(e.cfg)
	recs := make([]*kgo.Record, 0, n)
	index := make(map[*kgo.Record]logsubset.Location, n)
	var failures []failure
	var refused refusedTopics

	rls := ld.ResourceLogs()
	for ri := range rls.Len() {
		rl := rls.At(ri)
		res := rl.Resource()
		sls := rl.ScopeLogs()
		for si := range sls.Len() {
			sl := sls.At(si)
			b.startScope(rl, sl)
			lrs := sl.LogRecords()
			for li := range lrs.Len() {
				lr := lrs.At(li)
				loc := logsubset.Location{RI: ri, SI: si, LI: li}
				topic, notAllowed := b.topicFor(res, lr)
				refused.add(notAllowed)
				value, err := b.value(res, lr)
				if err != nil {
					failures = append(failures, failure{loc, topic, fmt.Errorf("%w: %w", errEncoding, err)})
					continue
				}
				r := &kgo.Record{Topic: topic, Key: b.key(res, lr), Value: value, Headers: headers(lr)}
				if size := recordSize(r); size > e.cfg.Producer.MaxMessageBytes {
					failures = append(failures, failure{loc, topic, fmt.Errorf("%w: %d bytes, producer::max_message_bytes is %d",
						errRecordTooLarge, size, e.cfg.Producer.MaxMessageBytes)})
					continue
				}
				recs = append(recs, r)
				index[r] = loc
			}
		}
	}

	e.reportRefusedTopics(ctx, refused)

	var ackBytes int64
	delivered := map[string]bool{}
	for _, res := range e.produce(ctx, recs) {
		if res.Err != nil {
			failures = append(failures, failure{index[res.Record], res.Record.Topic, res.Err})
			continue
		}
		delivered[res.Record.Topic] = true
		ackBytes += int64(recordSize(res.Record))
	}
	acked := int64(n - len(failures))
	e.telemetry.ExporterKafkaRecords.Add(ctx, acked, metric.WithAttributes(attribute.String("outcome", "acknowledged")))
	e.telemetry.ExporterKafkaRecordBytes.Add(ctx, ackBytes)
	if len(failures) == 0 {
		e.missing.update(nil, delivered)
		return nil
	}
	return e.failed(ctx, ld, failures, delivered)
}

// produce produces the records and returns one result for each. A broker that refuses a record batch as too
// large fails every record of it, though each of them may fit alone: those are produced again in halves, as the
// Java producer splits such a batch, until a refused batch holds a single record, which is then too large by
// itself. A batch with one oversized record among n costs about log2(n) more requests.
func (e *logsExporter) produce(ctx context.Context, recs []*kgo.Record) kgo.ProduceResults {
	results := e.client.ProduceSync(ctx, recs...)
	var tooLarge []*kgo.Record
	for _, res := range results {
		if res.Err != nil && isBatchTooLarge(res.Err) {
			tooLarge = append(tooLarge, res.Record)
		}
	}
	if len(tooLarge) < 2 || ctx.Err() != nil {
		return results
	}
	out := make(kgo.ProduceResults, 0, len(results))
	for _, res := range results {
		if res.Err == nil || !isBatchTooLarge(res.Err) {
			out = append(out, res)
		}
	}
	half := len(tooLarge) / 2
	out = append(out, e.produce(ctx, tooLarge[:half])...)
	return append(out, e.produce(ctx, tooLarge[half:])...)
}

// failed reports the failures and builds the error for exporterhelper.
func (e *logsExporter) failed(ctx context.Context, ld plog.Logs, failures []failure, delivered map[string]bool) error {
	n := ld.LogRecordCount()
	var retry []logsubset.Location
	var retryErrs, permErrs distinctErrors
	waiting := map[string]int{}
	var recreated []string
	for _, f := range failures {
		c := classify(f.err)
		e.telemetry.ExporterKafkaErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", c.reason)))
		if c.reason == reasonUnknownTopic {
			waiting[f.topic]++
			if errors.Is(f.err, kerr.UnknownTopicID) && !slices.Contains(recreated, f.topic) {
				recreated = append(recreated, f.topic)
			}
		}
		if c.permanent {
			permErrs.add(c.describe(f.topic, f.err))
			continue
		}
		retryErrs.add(c.describe(f.topic, f.err))
		retry = append(retry, f.loc)
	}
	e.missing.update(waiting, delivered)
	if len(recreated) > 0 {
		// The topic was deleted and created again under a new ID: franz-go keeps failing it with
		// UNKNOWN_TOPIC_ID until it forgets the old one, after which the retry learns the new ID.
		e.client.PurgeTopicsFromProducing(recreated...)
	}
	if permErrs.count > 0 {
		e.telemetry.ExporterKafkaRecords.Add(ctx, int64(permErrs.count), metric.WithAttributes(attribute.String("outcome", "permanent_failure")))
	}
	if len(retry) > 0 {
		e.telemetry.ExporterKafkaRecords.Add(ctx, int64(len(retry)), metric.WithAttributes(attribute.String("outcome", "retryable_failure")))
	}
	if permErrs.count > 0 && len(retry) > 0 {
		// exporterhelper sees only the retryable error, so the dropped records are reported here.
		e.logger.Error("Dropping records Kafka cannot accept", zap.Int("dropped_records", permErrs.count),
			zap.Int("records", n), zap.Error(permErrs.join()))
	}
	if len(retry) > 0 {
		err := fmt.Errorf("%d of %d records not acknowledged by Kafka: %w", len(retry), n, retryErrs.join())
		return consumererror.NewLogs(err, logsubset.Subset(ld, retry))
	}
	return consumererror.NewPermanent(fmt.Errorf("%d of %d records dropped: %w", permErrs.count, n, permErrs.join()))
}

// distinctErrors keeps the first few distinct errors of many.
type distinctErrors struct {
	errs  []error
	seen  map[string]bool
	count int
}

func (d *distinctErrors) add(err error) {
	d.count++
	msg := err.Error()
	if d.seen[msg] || len(d.errs) == maxDistinctErrors {
		return
	}
	if d.seen == nil {
		d.seen = make(map[string]bool)
	}
	d.seen[msg] = true
	d.errs = append(d.errs, err)
}

func (d *distinctErrors) join() error {
	return errors.Join(d.errs...)
}
