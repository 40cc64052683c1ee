package policymetricsconnector // import "github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/connector/policymetricsconnector/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/resultstate"
	"github.com/otelcol-policy/otelcol-policy/internal/storageclient"
)

type policyMetrics struct {
	cfg       *Config
	set       connector.Settings
	next      consumer.Metrics
	telemetry *metadata.TelemetryBuilder

	// mu serialises batches, emission and storage writes.
	mu        sync.Mutex
	tally     *resultstate.Tally
	decisions *decisionCounts
	store     *resultstate.Store
	client    storage.Client
	values    []string
	keys      int64

	stop chan struct{}
	done chan struct{}
}

func newConnector(cfg *Config, set connector.Settings, next consumer.Metrics) (*policyMetrics, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &policyMetrics{
		cfg: cfg, set: set, next: next, telemetry: tb,
		tally:     resultstate.New(cfg.Results.Labels, cfg.MaxKeys),
		decisions: newDecisionCounts(cfg.Decisions.Labels, cfg.Decisions.MaxSeries),
		values:    make([]string, max(len(cfg.Results.Labels), len(cfg.Decisions.Labels))),
	}, nil
}

func (c *policyMetrics) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *policyMetrics) Start(ctx context.Context, host component.Host) error {
	if c.cfg.Storage != nil {
		client, err := storageclient.Open(ctx, host, *c.cfg.Storage, component.KindConnector, c.set.ID)
		if err != nil {
			return err
		}
		c.client = client
		c.store = resultstate.NewStore(client, metadata.Type.String())
		err = c.store.Load(ctx, c.tally)
		switch {
		case errors.Is(err, resultstate.ErrRegrouped):
			c.set.Logger.Warn("results::labels changed since the state was stored; counting starts from scratch, "+
				"so clear the storage of the receivers upstream too if they emit only changes", zap.Error(err))
		case err != nil:
			_ = client.Close(context.Background())
			return fmt.Errorf("loading the stored state: %w", err)
		}
		c.telemetry.ConnectorPolicyMetricsEvictions.Add(ctx, c.tally.Evictions())
		c.reportKeys(ctx)
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.loop()
	return nil
}

func (c *policyMetrics) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			// The gauges are the current state, so a refused emission is simply superseded by the next one.
			_ = c.emit(context.Background())
		}
	}
}

func (c *policyMetrics) Shutdown(ctx context.Context) error {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
		_ = c.emit(ctx)
	}
	var err error
	if c.client != nil {
		err = c.client.Close(ctx)
		c.client = nil
	}
	c.telemetry.Shutdown()
	return err
}

// ConsumeLogs counts the batch. With storage, the latest outcomes are written before the batch is acknowledged,
// so a batch the receiver saw accepted is counted after a crash too.
func (c *policyMetrics) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	invalid, evicted := 0, 0
	now := time.Now()
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes()
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if isDecision(lr) {
					c.decisions.add(res, lr.Attributes(), c.values, now)
					continue
				}
				n, err := c.tally.Apply(res, lr, c.values)
				evicted += n
				if err != nil {
					if invalid++; invalid == 1 {
						c.set.Logger.Warn("A result record cannot be counted; it is skipped", zap.Error(err))
					}
				}
			}
		}
	}
	if invalid > 0 {
		c.countError(ctx, "invalid_record", invalid)
	}
	if evicted > 0 {
		c.telemetry.ConnectorPolicyMetricsEvictions.Add(ctx, int64(evicted))
	}
	c.reportKeys(ctx)
	return c.save(ctx)
}

// emit sends the gauges of every group and the decision sums.
func (c *policyMetrics) emit(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var groups []*resultstate.Group
	c.tally.All(func(g *resultstate.Group) { groups = append(groups, g) })
	if len(groups) == 0 && c.decisions.len() == 0 {
		return nil
	}
	md := c.metrics(groups, time.Now())
	if err := c.next.ConsumeMetrics(ctx, md); err != nil {
		c.countError(ctx, "consume", 1)
		c.set.Logger.Warn("The next consumer refused the policy metrics; the next interval sends them again", zap.Error(err))
		return err
	}
	// A group left empty was just reported as zero; it is forgotten from now on.
	for _, g := range groups {
		c.tally.MarkEmitted(g)
	}
	if err := c.save(ctx); err != nil {
		c.set.Logger.Warn("Storing the state failed", zap.Error(err))
	}
	return nil
}

// save writes what changed; the caller holds mu.
func (c *policyMetrics) save(ctx context.Context) error {
	if c.store == nil {
		return nil
	}
	if err := c.store.Save(ctx, c.tally); err != nil {
		c.countError(ctx, "storage", 1)
		return fmt.Errorf("policy_metrics: storing the state: %w", err)
	}
	return nil
}

func (c *policyMetrics) countError(ctx context.Context, reason string, n int) {
	c.telemetry.ConnectorPolicyMetricsErrors.Add(ctx, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
}

func (c *policyMetrics) reportKeys(ctx context.Context) {
	if k := int64(c.tally.Len()); k != c.keys {
		c.telemetry.ConnectorPolicyMetricsKeys.Add(ctx, k-c.keys)
		c.keys = k
	}
}
