// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate // import "github.com/otelcol-policy/otelcol-policy/internal/resultstate"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/storageclient"
)

// Settings describe the component a Runner runs the state of.
type Settings struct {
	// ID is the component's; its type prefixes the storage entries and the storage errors.
	ID     component.ID
	Kind   component.Kind
	Logger *zap.Logger
	// Interval is how often the component emits.
	Interval time.Duration
	// Storage names a storage extension that keeps the state across restarts; nil keeps it in memory only.
	Storage *component.ID
	// GroupByKey is the configuration key of the group attributes, for the warning when they changed.
	GroupByKey string
	// InvalidRecord is the warning logged for the first record of a batch the state cannot count.
	InvalidRecord string
	Telemetry     Telemetry
}

// Telemetry are the component's instruments for what the Runner counts.
type Telemetry struct {
	// Errors counts by attribute reason: invalid_record, storage, consume.
	Errors    metric.Int64Counter
	Evictions metric.Int64Counter
	Keys      metric.Int64UpDownCounter
	// Groups may be nil when the component does not report its groups.
	Groups metric.Int64UpDownCounter
	// Shutdown, if not nil, releases the instruments when the Runner shuts down.
	Shutdown func()
}

// EmitFunc sends what an interval reports of t and returns the groups it reported, which are marked emitted
// once the next consumer accepted them. It runs with the state locked. It returns ErrNothingDue when it sent
// nothing; any other error is the next consumer's refusal, which the component explains in its log.
type EmitFunc func(ctx context.Context, t *Tally) ([]*Group, error)

// ErrNothingDue is returned by an EmitFunc that had nothing to send.
var ErrNothingDue = errors.New("nothing due")

// Runner owns the lifecycle that the stateful components share: the state loaded from storage at start,
// batches counted and written before they are acknowledged, an emission every interval followed by a write,
// one last emission at shutdown, and the self-metrics of the state. The components keep what they emit and
// what they do with the records.
type Runner struct {
	set  Settings
	emit EmitFunc
	// newTicker is replaced by tests to drive the interval.
	newTicker func(time.Duration) (<-chan time.Time, func())

	// mu serialises batches, emissions and storage writes: a storage write must never overtake an older one of
	// the same group, and what is marked emitted must be exactly what was sent.
	mu     sync.Mutex
	tally  *Tally
	store  *Store
	client storage.Client
	values []string
	// keys and groups are the values last added to the up-down counters.
	keys, groups int64

	stop chan struct{}
	done chan struct{}
}

// NewRunner runs the state t of a component that emits with emit.
func NewRunner(t *Tally, emit EmitFunc, set Settings) *Runner {
	return &Runner{
		set: set, emit: emit, tally: t, values: make([]string, len(t.Names())),
		newTicker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
}

// Start loads the stored state, if storage is configured, and starts the interval.
func (r *Runner) Start(ctx context.Context, host component.Host) error {
	if r.set.Storage != nil {
		client, err := storageclient.Open(ctx, host, *r.set.Storage, r.set.Kind, r.set.ID)
		if err != nil {
			return err
		}
		r.client = client
		r.store = NewStore(client, r.set.ID.Type().String())
		err = r.store.Load(ctx, r.tally)
		switch {
		case errors.Is(err, ErrRegrouped):
			r.set.Logger.Warn(r.set.GroupByKey+" changed since the state was stored; counting starts from scratch, "+
				"so clear the storage of the receivers upstream too if they emit only changes", zap.Error(err))
		case err != nil:
			_ = client.Close(context.Background())
			r.client = nil
			return fmt.Errorf("loading the stored state: %w", err)
		}
		r.set.Logger.Info("Loaded the stored state", zap.Int("keys", r.tally.Len()), zap.Int("groups", r.tally.Groups()))
		r.set.Telemetry.Evictions.Add(ctx, r.tally.Evictions())
		r.reportSizes(ctx)
	}
	tick, stopTicker := r.newTicker(r.set.Interval)
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.loop(tick, stopTicker) //nolint:gosec // G118: the loop outlives Start's context; Shutdown stops it
	return nil
}

func (r *Runner) loop(tick <-chan time.Time, stopTicker func()) {
	defer close(r.done)
	defer stopTicker()
	for {
		select {
		case <-r.stop:
			return
		case <-tick:
			// A refused emission stays due; the next interval sends the state of then.
			_ = r.Flush(context.Background())
		}
	}
}

// Count counts the result records of ld and, with storage, writes what changed before returning, so that a
// batch the previous stage sees accepted is in the state after a crash too. A batch refused later is sent
// again, and counting the same latest outcome twice changes nothing. divert, if not nil, is offered every
// record first, with the state locked; a record it takes is not counted.
func (r *Runner) Count(ctx context.Context, ld plog.Logs, divert func(res pcommon.Map, lr plog.LogRecord) bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	invalid, evicted := 0, 0
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes()
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if divert != nil && divert(res, lr) {
					continue
				}
				n, err := r.tally.Apply(res, lr, r.values)
				evicted += n
				if err != nil {
					if invalid++; invalid == 1 {
						r.set.Logger.Warn(r.set.InvalidRecord, zap.Error(err))
					}
				}
			}
		}
	}
	if invalid > 0 {
		r.countError(ctx, "invalid_record", invalid)
	}
	if evicted > 0 {
		r.set.Telemetry.Evictions.Add(ctx, int64(evicted))
	}
	r.reportSizes(ctx)
	return r.save(ctx)
}

// Flush emits now, as the interval does. Every emission (each interval, the last one at shutdown, a test's)
// passes here, so a condition on emitting at all, such as a replica that must leave emitting to a leader,
// belongs here and nowhere else.
func (r *Runner) Flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	groups, err := r.emit(ctx, r.tally)
	switch {
	case errors.Is(err, ErrNothingDue):
		return nil
	case err != nil:
		r.countError(ctx, "consume", 1)
		return err
	}
	for _, g := range groups {
		r.tally.MarkEmitted(g)
	}
	r.reportSizes(ctx)
	if err := r.save(ctx); err != nil {
		// What was emitted went out; the state is written with the next batch or emission.
		r.set.Logger.Warn("Storing the state after an emission failed", zap.Error(err))
	}
	return nil
}

// Shutdown stops the interval, emits once more, closes the storage client and releases the instruments.
func (r *Runner) Shutdown(ctx context.Context) error {
	if r.stopInterval() {
		// The component logged a refusal; with storage, what was not sent is sent after the next start.
		_ = r.Flush(ctx)
	}
	err := r.closeStorage(ctx)
	if r.set.Telemetry.Shutdown != nil {
		r.set.Telemetry.Shutdown()
	}
	return err
}

// Halt stops the interval and closes the storage client without emitting or writing: what a crash leaves
// behind. Tests of restarts use it.
func (r *Runner) Halt(ctx context.Context) error {
	r.stopInterval()
	return r.closeStorage(ctx)
}

// stopInterval stops the loop and reports whether it was running.
func (r *Runner) stopInterval() bool {
	if r.stop == nil {
		return false
	}
	close(r.stop)
	<-r.done
	r.stop = nil
	return true
}

func (r *Runner) closeStorage(ctx context.Context) error {
	if r.client == nil {
		return nil
	}
	err := r.client.Close(ctx)
	r.client = nil
	return err
}

// save writes what changed; the caller holds mu.
func (r *Runner) save(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	if err := r.store.Save(ctx, r.tally); err != nil {
		r.countError(ctx, "storage", 1)
		return fmt.Errorf("%s: storing the state: %w", r.set.ID.Type(), err)
	}
	return nil
}

func (r *Runner) countError(ctx context.Context, reason string, n int) {
	r.set.Telemetry.Errors.Add(ctx, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
}

// reportSizes moves the up-down counters to the current sizes; the caller holds mu or has not started.
func (r *Runner) reportSizes(ctx context.Context) {
	if k := int64(r.tally.Len()); k != r.keys {
		r.set.Telemetry.Keys.Add(ctx, k-r.keys)
		r.keys = k
	}
	if r.set.Telemetry.Groups == nil {
		return
	}
	if g := int64(r.tally.Groups()); g != r.groups {
		r.set.Telemetry.Groups.Add(ctx, g-r.groups)
		r.groups = g
	}
}
