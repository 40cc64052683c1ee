// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"
)

// Bounds franz-go puts on its timeouts; the maximum produce request timeout is its default, how long a broker
// may wait for in-sync replicas.
const (
	minProduceRequestTimeout = 100 * time.Millisecond
	maxProduceRequestTimeout = 10 * time.Second
	minRecordDeliveryTimeout = time.Second
)

// clientOptions maps the configuration onto franz-go. franz-go retries failed produce requests on its own, for
// ever by default; the record delivery timeout, kept below exporterhelper's timeout, makes it give up first so
// that exporterhelper's retry_on_failure (and its backoff, max_elapsed_time and queue) governs retries, and so
// that the error returned is franz-go's (which wraps the last broker error) rather than a bare deadline.
func clientOptions(ctx context.Context, cfg *Config, logger *zap.Logger) ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.WithLogger(zapLogger{logger}),
		kgo.ProducerBatchCompression(compressionCodec(cfg.Producer.Compression)),
		kgo.ProducerBatchMaxBytes(int32(cfg.Producer.MaxMessageBytes)), //nolint:gosec // G115: Validate keeps it at most 1 GiB
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	if cfg.Producer.AllowAutoTopicCreation {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if cfg.ClientID != "" {
		opts = append(opts, kgo.ClientID(cfg.ClientID))
	}
	switch cfg.Producer.RequiredAcks {
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if t := cfg.TimeoutConfig.Timeout; t > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(min(max(t, minProduceRequestTimeout), maxProduceRequestTimeout)))
		// franz-go refuses a delivery timeout under a second; below that the context's deadline alone bounds a
		// produce, and the error is a bare deadline.
		if d := t * 9 / 10; d >= minRecordDeliveryTimeout {
			opts = append(opts, kgo.RecordDeliveryTimeout(d))
		}
	}
	if tc := cfg.Auth.TLS.Get(); tc != nil {
		tlsCfg, err := tc.LoadTLSConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading auth::tls: %w", err)
		}
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	if s := cfg.Auth.SASL.Get(); s != nil {
		opts = append(opts, kgo.SASL(saslMechanism(s)))
	}
	return opts, nil
}

func saslMechanism(s *SASLConfig) sasl.Mechanism {
	switch s.Mechanism {
	case MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: string(s.Password)}.AsSha256Mechanism()
	case MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: string(s.Password)}.AsSha512Mechanism()
	}
	return plain.Auth{User: s.Username, Pass: string(s.Password)}.AsMechanism()
}

func compressionCodec(name string) kgo.CompressionCodec {
	switch name {
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// zapLogger passes franz-go's warnings and errors to the collector's logger; its info level reports every
// metadata refresh and connection. franz-go never logs credentials.
type zapLogger struct{ l *zap.Logger }

func (zapLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (z zapLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	fields := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		k, _ := keyvals[i].(string)
		fields = append(fields, zap.Any(k, keyvals[i+1]))
	}
	switch level {
	case kgo.LogLevelError:
		z.l.Error(msg, fields...)
	case kgo.LogLevelWarn:
		z.l.Warn(msg, fields...)
	case kgo.LogLevelInfo:
		z.l.Info(msg, fields...)
	default:
		z.l.Debug(msg, fields...)
	}
}
