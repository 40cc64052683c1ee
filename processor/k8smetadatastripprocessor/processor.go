// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor/internal/metadata"
)

type stripProcessor struct {
	remove    *removalTree
	sortKeys  bool
	telemetry *metadata.TelemetryBuilder
}

func newStripProcessor(cfg *Config, set component.TelemetrySettings) (*stripProcessor, error) {
	paths, err := cfg.removalPaths()
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &stripProcessor{remove: newRemovalTree(paths), sortKeys: cfg.SortKeys, telemetry: tb}, nil
}

func (p *stripProcessor) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	s := strip{remove: p.remove, sortKeys: p.sortKeys}
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				s.body(lr.Body())
			}
		}
	}
	// Once per batch rather than per object, to keep the counters off the per-record path.
	if s.objects > 0 {
		p.telemetry.ProcessorK8sMetadataStripObjects.Add(ctx, s.objects)
	}
	if s.fields > 0 {
		p.telemetry.ProcessorK8sMetadataStripFields.Add(ctx, s.fields)
	}
	return ld, nil
}

func (p *stripProcessor) shutdown(context.Context) error {
	p.telemetry.Shutdown()
	return nil
}
