// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
)

type logsExporter struct {
	cfg       *Config
	logger    *zap.Logger
	marshaler plog.JSONMarshaler
	file      *lineFile
}

func newLogsExporter(cfg *Config, logger *zap.Logger) *logsExporter {
	return &logsExporter{cfg: cfg, logger: logger}
}

func (e *logsExporter) start(context.Context, component.Host) error {
	mode, err := e.cfg.fileMode()
	if err != nil {
		return err
	}
	f, err := openLineFile(e.cfg.Path, mode, e.cfg.Sync, e.cfg.Rotation, e.logger)
	if err != nil {
		return err
	}
	e.file = f
	return nil
}

// consumeLogs writes the batch as one OTLP JSON line, the format of the contrib file exporter and of the
// otlpjson file receiver, and returns only once the line is written (and synced when configured).
func (e *logsExporter) consumeLogs(_ context.Context, ld plog.Logs) error {
	buf, err := e.marshaler.MarshalLogs(ld)
	if err != nil {
		return consumererror.NewPermanent(fmt.Errorf("encoding %d log records as OTLP JSON: %w", ld.LogRecordCount(), err))
	}
	return e.file.writeLine(buf)
}

func (e *logsExporter) shutdown(context.Context) error {
	if e.file == nil {
		return nil
	}
	return e.file.close()
}
