package policyaggregateprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/internal/storageclient"
	"github.com/otelcol-policy/otelcol-policy/processor/policyaggregateprocessor/internal/metadata"
)

type aggregator struct {
	cfg       *Config
	set       processor.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder

	// mu serialises record batches, summaries and storage writes: a storage write must never overtake an older
	// one of the same group.
	mu     sync.Mutex
	tally  *resultstate.Tally
	store  *resultstate.Store
	client storage.Client
	values []string
	// keys and groups are the values last added to the up-down counters.
	keys, groups int64

	stop chan struct{}
	done chan struct{}
}

func newAggregator(cfg *Config, set processor.Settings, next consumer.Logs) (*aggregator, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &aggregator{
		cfg: cfg, set: set, next: next, telemetry: tb,
		tally:  resultstate.New(cfg.GroupBy, cfg.MaxKeys),
		values: make([]string, len(cfg.GroupBy)),
	}, nil
}

func (p *aggregator) start(ctx context.Context, host component.Host) error {
	if p.cfg.Storage != nil {
		client, err := storageclient.Open(ctx, host, *p.cfg.Storage, component.KindProcessor, p.set.ID)
		if err != nil {
			return err
		}
		p.client = client
		p.store = resultstate.NewStore(client, metadata.Type.String())
		err = p.store.Load(ctx, p.tally)
		switch {
		case errors.Is(err, resultstate.ErrRegrouped):
			p.set.Logger.Warn("group_by changed since the state was stored; counting starts from scratch, so "+
				"clear the storage of the receivers upstream too if they emit only changes", zap.Error(err))
		case err != nil:
			_ = client.Close(context.Background())
			return fmt.Errorf("loading the stored state: %w", err)
		}
		p.set.Logger.Info("Loaded the aggregation state", zap.Int("keys", p.tally.Len()), zap.Int("groups", p.tally.Groups()))
		p.telemetry.ProcessorPolicyAggregateEvictions.Add(ctx, p.tally.Evictions())
		p.reportSizes(ctx)
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.loop()
	return nil
}

func (p *aggregator) loop() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			// A refused summary stays due; the next tick retries it with the counts of then.
			_ = p.flush(context.Background())
		}
	}
}

func (p *aggregator) shutdown(ctx context.Context) error {
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
		if err := p.flush(ctx); err != nil {
			p.set.Logger.Warn("The last summaries were not delivered; they are sent after the next start "+
				"if storage is configured", zap.Error(err))
		}
	}
	var err error
	if p.client != nil {
		err = p.client.Close(ctx)
		p.client = nil
	}
	p.telemetry.Shutdown()
	return err
}

// processLogs counts the result records and passes everything on; with results: drop it removes the counted
// result records. The state is written to storage before the batch is passed on, so a batch the previous stage
// sees accepted is never missing from the state after a crash. A batch refused later is sent again, and
// counting the same latest outcome twice changes nothing.
func (p *aggregator) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	invalid, evicted := 0, 0
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes()
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				n, err := p.tally.Apply(res, lr, p.values)
				evicted += n
				if err != nil {
					invalid++
					if invalid == 1 {
						p.set.Logger.Warn("A result record cannot be aggregated; it is passed on unchanged", zap.Error(err))
					}
				}
			}
		}
	}
	if invalid > 0 {
		p.countError(ctx, "invalid_record", invalid)
	}
	if evicted > 0 {
		p.telemetry.ProcessorPolicyAggregateEvictions.Add(ctx, int64(evicted))
	}
	p.reportSizes(ctx)
	if err := p.save(ctx); err != nil {
		return ld, err
	}
	if p.cfg.Results == ResultsDrop {
		dropCounted(ld)
		if ld.LogRecordCount() == 0 {
			return ld, processorhelper.ErrSkipProcessingData
		}
	}
	return ld, nil
}

// dropCounted removes the result records the state counted. Invalid ones continue, since the state does not
// represent them.
func dropCounted(ld plog.Logs) {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				_, ok, err := resultstate.ReadRecord(lr)
				return ok && err == nil
			})
		}
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool { return sl.LogRecords().Len() == 0 })
	}
	ld.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool { return rl.ScopeLogs().Len() == 0 })
}

// save writes what changed; the caller holds mu.
func (p *aggregator) save(ctx context.Context) error {
	if p.store == nil {
		return nil
	}
	if err := p.store.Save(ctx, p.tally); err != nil {
		p.countError(ctx, "storage", 1)
		return fmt.Errorf("policy_aggregate: storing the state: %w", err)
	}
	return nil
}

func (p *aggregator) countError(ctx context.Context, reason string, n int) {
	p.telemetry.ProcessorPolicyAggregateErrors.Add(ctx, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
}

// reportSizes moves the up-down counters to the current sizes; the caller holds mu.
func (p *aggregator) reportSizes(ctx context.Context) {
	if k := int64(p.tally.Len()); k != p.keys {
		p.telemetry.ProcessorPolicyAggregateKeys.Add(ctx, k-p.keys)
		p.keys = k
	}
	if g := int64(p.tally.Groups()); g != p.groups {
		p.telemetry.ProcessorPolicyAggregateGroups.Add(ctx, g-p.groups)
		p.groups = g
	}
}
