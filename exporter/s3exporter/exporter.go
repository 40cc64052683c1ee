package s3exporter // import "github.com/otelcol-policy/otelcol-policy/exporter/s3exporter"

import (
	"context"
	"net/http"
	"sync"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/exporter/s3exporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

type logsExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	layout    *keyLayout
	codec     *codec

	// wrapClient lets tests observe the S3 requests.
	wrapClient func(s3.HTTPClient) s3.HTTPClient
	mu         sync.Mutex
	transports []*http.Transport
	uploader   *uploader
}

func newLogsExporter(cfg *Config, set exporter.Settings) (*logsExporter, error) {
	c, err := newCodec(cfg.S3Uploader.Compression)
	if err != nil {
		return nil, err
	}
	layout, err := newKeyLayout(cfg, c.ext)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &logsExporter{cfg: cfg, logger: set.Logger, telemetry: tb, layout: layout, codec: c}, nil
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
	path  string
	lines []byte
}

// consumeLogs writes one object per partition of the batch and returns once all are stored. It stops at the
// first failure: the retry uploads the batch again, and the objects already stored are overwritten with the
// same content under the same keys.
func (e *logsExporter) consumeLogs(ctx context.Context, ld plog.Logs) error {
	parts := e.split(ld)
	var body []byte
	for _, p := range parts {
		key := e.layout.key(p.path, p.lines)
		var err error
		if body, err = e.codec.compress(body[:0], p.lines); err != nil {
			return err
		}
		if err := e.uploader.put(ctx, key, body, e.codec); err != nil {
			return classify(err, e.cfg.S3Uploader.S3Bucket, key)
		}
		e.telemetry.ExporterS3Objects.Add(ctx, 1)
		e.telemetry.ExporterS3Bytes.Add(ctx, int64(len(body)))
		e.logger.Debug("Uploaded object", zap.String("key", key), zap.Int("bytes", len(body)),
			zap.Int("uncompressed_bytes", len(p.lines)))
	}
	return nil
}

// split renders the batch as JSON lines, grouped by partition in the order partitions first appear, so that the
// same batch always gives the same objects.
func (e *logsExporter) split(ld plog.Logs) []*partition {
	var parts []*partition
	byPath := map[string]*partition{}
	var path []byte
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource()
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				path = e.layout.appendPartition(path[:0], res, lr)
				p, ok := byPath[string(path)]
				if !ok {
					p = &partition{path: string(path)}
					byPath[p.path] = p
					parts = append(parts, p)
				}
				p.lines = recordjson.Append(p.lines, res, lr)
				p.lines = append(p.lines, '\n')
			}
		}
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
