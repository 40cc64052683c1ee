// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpcexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/status"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/logsubset"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// maxLoggedRejections bounds the rejections logged one by one per batch: a server that rejects a whole batch
// for one reason should not flood the log; the rest are summed up in one line.
const maxLoggedRejections = 10

var (
	outcomeAccepted = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "accepted")))
	outcomeRejected = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "rejected")))
	outcomeSkipped  = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "skipped")))
	outcomeInvalid  = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "invalid")))
)

type logsExporter struct {
	cfg       *Config
	set       exporter.Settings
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder

	conn   *grpc.ClientConn
	client pb.ResultForwarderClient
	status *sendStatus

	skippedOnce sync.Once
}

func newLogsExporter(cfg *Config, set exporter.Settings) (*logsExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &logsExporter{cfg: cfg, set: set, logger: set.Logger, telemetry: tb}, nil
}

// reconnect caps gRPC's wait between two attempts to reconnect at maxReconnectDelay. gRPC's default doubles
// (×1.6) up to 2 minutes, and a call on a broken connection fails at once without trying it again: after a
// server outage of 2 minutes the exporter saw the server back only about a minute after it was, and its queue
// drained a minute late (testbed/outage).
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxReconnectDelay},
	MinConnectTimeout: 20 * time.Second,
}

// maxReconnectDelay is the longest the exporter waits before it tries a broken connection again.
const maxReconnectDelay = 5 * time.Second

// start creates the connection, which gRPC establishes in the background and re-establishes when it breaks:
// a collector starts while the server is down, and its queue holds what arrives meanwhile. Extensions are only
// known here, so the auth extension is resolved here too.
func (e *logsExporter) start(ctx context.Context, host component.Host) error {
	userAgent := fmt.Sprintf("%s/%s (%s/%s)", e.set.BuildInfo.Description, e.set.BuildInfo.Version, runtime.GOOS, runtime.GOARCH)
	conn, err := e.cfg.ClientConfig.ToClientConn(ctx, host.GetExtensions(), e.set.TelemetrySettings,
		configgrpc.WithGrpcDialOption(grpc.WithUserAgent(userAgent)),
		configgrpc.WithGrpcDialOption(grpc.WithConnectParams(reconnect)))
	if err != nil {
		return err
	}
	e.conn = conn
	e.client = pb.NewResultForwarderClient(conn)
	e.status = &sendStatus{host: host, endpoint: e.cfg.ClientConfig.Endpoint}
	return nil
}

func (e *logsExporter) shutdown(context.Context) error {
	var err error
	if e.conn != nil {
		err = e.conn.Close()
	}
	e.telemetry.Shutdown()
	return err
}

// consumeLogs forwards the batch's results in requests of at most max_results_per_request, in order. When a
// request fails with a retryable error, the records of that request and the following ones are handed back to
// exporterhelper (consumererror.Logs), so a retry does not resend the requests already stored, nor skip or
// count again the records that were not results.
func (e *logsExporter) consumeLogs(ctx context.Context, ld plog.Logs) error {
	if e.client == nil {
		return errors.New("results_grpc exporter not started")
	}
	b := convert(ld, e.cfg.MaxRequestBytes)
	e.reportUnsendable(ctx, &b)

	for _, s := range split(b.sizes, e.cfg.MaxResultsPerRequest, e.cfg.MaxRequestBytes) {
		req := &pb.ForwardRequest{Results: b.results[s.start:s.end], ExtraMetadata: e.cfg.ExtraMetadata}
		resp, err := e.client.Forward(ctx, req)
		e.telemetry.ExporterResultsGrpcRequests.Add(ctx, 1,
			metric.WithAttributes(attribute.String("code", status.Code(err).String())))
		if err != nil {
			// A call cancelled by the collector's shutdown says nothing about the server.
			if !errors.Is(ctx.Err(), context.Canceled) {
				e.status.failed(err)
			}
			return e.failed(ld, &b, s.start, err)
		}
		e.status.succeeded()
		e.reportResponse(ctx, req, resp)
	}
	return nil
}

// failed builds the error of a request that failed. A permanent error drops what was not sent yet; a
// retryable one hands it back. Errors hold gRPC's status (code and the server's message) and never the
// request's metadata, so no token.
func (e *logsExporter) failed(ld plog.Logs, b *batch, start int, err error) error {
	unsent, total := len(b.results)-start, len(b.results)
	c := classify(err)
	if c.permanent {
		return consumererror.NewPermanent(fmt.Errorf("%s: %d of %d results dropped: %s: %w",
			e.cfg.ClientConfig.Endpoint, unsent, total, c.what, err))
	}
	err = fmt.Errorf("%s: %d of %d results not forwarded yet: %w", e.cfg.ClientConfig.Endpoint, unsent, total, err)
	if c.delay > 0 {
		err = exporterhelper.NewThrottleRetry(err, c.delay)
	}
	if start == 0 && b.skipped == 0 && b.invalid == 0 {
		return err
	}
	return consumererror.NewLogs(err, logsubset.Subset(ld, b.locs[start:]))
}

// reportUnsendable counts the records that are not sent, and logs once per batch why results were dropped.
func (e *logsExporter) reportUnsendable(ctx context.Context, b *batch) {
	if b.skipped > 0 {
		e.telemetry.ExporterResultsGrpcResults.Add(ctx, int64(b.skipped), outcomeSkipped)
		e.skippedOnce.Do(func() {
			e.logger.Info("Skipping records that are not policy.result records (decisions, summaries); "+
				"route only results to this exporter. They are counted in otelcol_exporter_results_grpc_results{outcome=\"skipped\"}.",
				zap.Int("skipped_records", b.skipped))
		})
	}
	if b.invalid > 0 {
		e.telemetry.ExporterResultsGrpcResults.Add(ctx, int64(b.invalid), outcomeInvalid)
		e.logger.Warn("Dropping policy.result records that cannot be forwarded",
			zap.Int("dropped_records", b.invalid), zap.NamedError("first_error", b.firstInvalid))
	}
}

// reportResponse counts a successful response. Rejected results are not retried: the server said why it
// cannot store them, and sending them unchanged would be rejected again.
func (e *logsExporter) reportResponse(ctx context.Context, req *pb.ForwardRequest, resp *pb.ForwardResponse) {
	e.telemetry.ExporterResultsGrpcResults.Add(ctx, int64(resp.GetAccepted()), outcomeAccepted)
	rejected := resp.GetRejected()
	if len(rejected) == 0 {
		return
	}
	e.telemetry.ExporterResultsGrpcResults.Add(ctx, int64(len(rejected)), outcomeRejected)
	for i, r := range rejected {
		e.telemetry.ExporterResultsGrpcRejections.Add(ctx, 1,
			metric.WithAttributes(attribute.String("reason", rejectionClass(r.GetReason()))))
		if i >= maxLoggedRejections {
			continue
		}
		fields := []zap.Field{zap.String("id", r.GetId()), zap.String("reason", r.GetReason())}
		if idx := int(r.GetIndex()); idx < len(req.Results) {
			res := req.Results[idx]
			fields = append(fields, zap.String("key", res.GetKey()), zap.String("source", res.GetSource()),
				zap.String("policy", res.GetPolicy()), zap.String("rule", res.GetRule()))
		}
		e.logger.Warn("The results server rejected a result; it is dropped", fields...)
	}
	if len(rejected) > maxLoggedRejections {
		e.logger.Warn("The results server rejected more results of the request; they are dropped",
			zap.Int("not_logged", len(rejected)-maxLoggedRejections), zap.Int("rejected", len(rejected)),
			zap.Int("results", len(req.Results)))
	}
}
