// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate // import "github.com/otelcol-policy/otelcol-policy/internal/resultstate"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/leadership"
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
	// K8sLeaderElector names a k8s_leader_elector: the Runner then counts and emits only while this replica
	// leads, with the state it loads from Storage when it starts leading and writes back before it stops.
	K8sLeaderElector *component.ID
	// Extra, if not nil, is state the component keeps beside the tally, stored and handed over with it.
	Extra     Extra
	Telemetry Telemetry
}

// Extra is state a component keeps beside the tally (policy_metrics' decision sums) in one storage entry. The
// Runner loads it with the tally, writes it with every emission when it changed, and empties it when this
// replica stops leading; it calls it only with the state locked. Writing it with the emissions rather than
// with every batch keeps batches that change only it free of storage writes; a crash then loses what changed
// since the last emission, but what was emitted was written in the same step, so what it counts never goes
// below what was emitted.
type Extra interface {
	// Name names its storage entry among the component's.
	Name() string
	// Reset empties it.
	Reset()
	// Load reads the stored entry into the empty state; an error wrapping ErrRegrouped discards the entry.
	Load([]byte) error
	// Encode returns the entry to store.
	Encode() ([]byte, error)
}

// ValidateLeaderElector checks the k8s_leader_elector and storage settings of a component: with a leader elector
// the state follows the leader through the storage, and without storage a new leader would start from zero and
// count only what its receivers send it, which after a handover is only what changed.
func ValidateLeaderElector(elector, storage *component.ID) error {
	if elector != nil && storage == nil {
		return errors.New("k8s_leader_elector needs storage: the state passes from one leader to the next through it")
	}
	return nil
}

// ErrNotLeading refuses the records that reach a replica that does not lead: the state is the leader's, and a
// refused batch is sent again by a receiver that follows the same leader elector, to the next leader.
var ErrNotLeading = errors.New("this replica does not lead (k8s_leader_elector); the leader counts the records")

// Telemetry are the component's instruments for what the Runner counts.
type Telemetry struct {
	// Errors counts by attribute reason: invalid_record, storage, consume, not_leading.
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
//
// With a leader elector, "start" and "shutdown" are the start and the end of each leadership: the state is
// loaded from the shared storage when this replica starts leading, and emitted, written and closed when it
// stops, so the next leader continues from exactly what this one counted and emitted. In between, a replica
// that does not lead holds no state and refuses records (ErrNotLeading).
type Runner struct {
	set  Settings
	emit EmitFunc
	// newTicker is replaced by tests to drive the interval.
	newTicker func(time.Duration) (<-chan time.Time, func())
	host      component.Host

	// lead serialises starting and stopping to lead. Opening the storage may wait for the previous leader's file
	// lock, which must not hold up mu.
	lead sync.Mutex
	// closed is set at shutdown: a leadership that starts later is ignored.
	closed bool
	// ctx ends at shutdown, and with it the retries of a leadership waiting for its storage.
	ctx    context.Context
	cancel context.CancelFunc

	// mu serialises batches, emissions and storage writes: a storage write must never overtake an older one of
	// the same group, and what is marked emitted must be exactly what was sent.
	mu sync.Mutex
	// leading is written under lead and mu; always true between Start and Shutdown without a leader elector.
	leading bool
	tally   *Tally
	store   *Store
	client  storage.Client
	values  []string
	// extraStored is the Extra's entry as last written.
	extraStored []byte
	// keys and groups are the values last added to the up-down counters.
	keys, groups int64
	// refusedWarned is set once a refusal of this follower's period was logged.
	refusedWarned bool

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

// Start loads the stored state, if storage is configured, and starts the interval. With a leader elector it
// only registers with it: the state is loaded when this replica starts leading.
func (r *Runner) Start(ctx context.Context, host component.Host) error {
	r.host = host
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if r.set.K8sLeaderElector == nil {
		if err := r.startLeading(ctx); err != nil {
			return err
		}
	} else {
		if r.set.Storage != nil {
			if _, err := storageclient.Find(host, *r.set.Storage); err != nil {
				return err
			}
		}
		le, err := leadership.Find(host, *r.set.K8sLeaderElector)
		if err != nil {
			return err
		}
		le.SetCallBackFuncs(r.startedLeading, func() {
			if err := r.stopLeading(context.Background()); err != nil {
				r.set.Logger.Warn("Closing the storage after leading", zap.Error(err))
			}
		})
	}
	tick, stopTicker := r.newTicker(r.set.Interval)
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.loop(tick, stopTicker) //nolint:gosec // G118: the loop outlives Start's context; Shutdown stops it
	return nil
}

// startedLeading loads the stored state, retrying while this replica leads (leadership.TakeOver). The elector
// starts the components that this one feeds only once it returns.
func (r *Runner) startedLeading(leading context.Context) {
	ctx, cancel := context.WithCancel(leading)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()
	leadership.TakeOver(ctx, r.startLeading, func(attempt int, err error) {
		// The first attempt fails routinely during a handover, while the previous leader still writes.
		switch {
		case attempt == 1:
		case err == nil:
			componentstatus.ReportStatus(r.host, componentstatus.NewEvent(componentstatus.StatusOK))
		default:
			r.set.Logger.Warn("Cannot load the stored state to lead; retrying", zap.Error(err))
			componentstatus.ReportStatus(r.host, componentstatus.NewRecoverableErrorEvent(err))
		}
	})
}

// startLeading opens the storage and loads the state into an empty tally; nothing when the leadership already
// ended or the Runner shut down.
func (r *Runner) startLeading(ctx context.Context) error {
	r.lead.Lock()
	defer r.lead.Unlock()
	if r.closed || r.leading || ctx.Err() != nil {
		return nil
	}
	var client storage.Client
	if r.set.Storage != nil {
		var err error
		if client, err = storageclient.Open(ctx, r.host, *r.set.Storage, r.set.Kind, r.set.ID); err != nil {
			return err
		}
		if ctx.Err() != nil {
			// The open waited for the previous leader's lock, and this leadership ended meanwhile.
			return client.Close(context.Background())
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(ctx, client); err != nil {
		_ = client.Close(context.Background())
		return err
	}
	r.leading, r.refusedWarned = true, false
	return nil
}

// load empties the state and reads the stored one from client, if any; the caller holds mu.
func (r *Runner) load(ctx context.Context, client storage.Client) error {
	r.tally.Reset()
	if r.set.Extra != nil {
		r.set.Extra.Reset()
	}
	r.store, r.client, r.extraStored = nil, nil, nil
	if client == nil {
		r.reportSizes(ctx)
		return nil
	}
	store := NewStore(client, r.set.ID.Type().String())
	err := store.Load(ctx, r.tally)
	switch {
	case errors.Is(err, ErrRegrouped):
		r.set.Logger.Warn(r.set.GroupByKey+" changed since the state was stored; counting starts from scratch, "+
			"so clear the storage of the receivers upstream too if they emit only changes", zap.Error(err))
	case err != nil:
		r.tally.Reset()
		return fmt.Errorf("loading the stored state: %w", err)
	}
	if r.set.Extra != nil {
		raw, err := client.Get(ctx, store.entryKey(r.set.Extra.Name()))
		if err != nil {
			r.tally.Reset()
			return fmt.Errorf("reading the stored %s: %w", r.set.Extra.Name(), err)
		}
		if raw != nil {
			err = r.set.Extra.Load(raw)
		}
		switch {
		case errors.Is(err, ErrRegrouped):
			r.set.Extra.Reset()
			r.set.Logger.Warn("The stored "+r.set.Extra.Name()+" entry belongs to another configuration; it starts from scratch", zap.Error(err))
		case err != nil:
			r.tally.Reset()
			r.set.Extra.Reset()
			return fmt.Errorf("decoding the stored %s: %w", r.set.Extra.Name(), err)
		default:
			r.extraStored = raw
		}
	}
	r.store, r.client = store, client
	r.set.Logger.Info("Loaded the stored state", zap.Int("keys", r.tally.Len()), zap.Int("groups", r.tally.Groups()))
	r.set.Telemetry.Evictions.Add(ctx, r.tally.Evictions())
	r.reportSizes(ctx)
	return nil
}

// stopLeading emits what is due, writes the state and closes the storage, which lets the next leader open it,
// then forgets the state.
func (r *Runner) stopLeading(ctx context.Context) error {
	r.lead.Lock()
	defer r.lead.Unlock()
	if !r.leading {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The component logged a refusal; what was not sent stays due in the stored state.
	_ = r.flush(ctx)
	if err := r.save(ctx, true); err != nil {
		r.set.Logger.Warn("Storing the state before closing it failed", zap.Error(err))
	}
	err := r.closeStorage(ctx)
	r.leading, r.store = false, nil
	r.tally.Reset()
	if r.set.Extra != nil {
		r.set.Extra.Reset()
	}
	r.reportSizes(ctx)
	return err
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
	if !r.leading {
		r.countError(ctx, "not_leading", 1)
		if !r.refusedWarned {
			r.refusedWarned = true
			r.set.Logger.Warn("Records reached a replica that does not lead; they are refused. Only receivers that "+
				"follow the same k8s_leader_elector belong in front of this component", zap.Int("records", ld.LogRecordCount()))
		}
		return fmt.Errorf("%s: %w", r.set.ID, ErrNotLeading)
	}
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
	return r.save(ctx, false)
}

// Flush emits now, as the interval does; a replica that does not lead emits nothing.
func (r *Runner) Flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leading {
		return nil
	}
	return r.flush(ctx)
}

// flush is every emission: each interval's, the last one of a leadership, a test's. The caller holds mu.
func (r *Runner) flush(ctx context.Context) error {
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
	if err := r.save(ctx, true); err != nil {
		// What was emitted went out; the state is written with the next batch or emission.
		r.set.Logger.Warn("Storing the state after an emission failed", zap.Error(err))
	}
	return nil
}

// Shutdown stops the interval and ends the leadership, or the lifetime without a leader elector: it emits once
// more, writes the state, closes the storage client, and releases the instruments.
func (r *Runner) Shutdown(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
	}
	r.lead.Lock()
	r.closed = true
	r.lead.Unlock()
	r.stopInterval()
	err := r.stopLeading(ctx)
	if r.set.Telemetry.Shutdown != nil {
		r.set.Telemetry.Shutdown()
	}
	return err
}

// Halt stops the interval and closes the storage client without emitting or writing: what a crash leaves
// behind. Tests of restarts use it.
func (r *Runner) Halt(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
	}
	r.lead.Lock()
	defer r.lead.Unlock()
	r.closed = true
	r.stopInterval()
	r.mu.Lock()
	defer r.mu.Unlock()
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

// save writes what changed of the tally and, withExtra, of the Extra; the caller holds mu.
func (r *Runner) save(ctx context.Context, withExtra bool) error {
	if r.store == nil {
		return nil
	}
	var extra []*storage.Operation
	var entry []byte
	if withExtra && r.set.Extra != nil {
		var err error
		if entry, err = r.set.Extra.Encode(); err != nil {
			return fmt.Errorf("%s: encoding the %s: %w", r.set.ID.Type(), r.set.Extra.Name(), err)
		}
		if !bytes.Equal(entry, r.extraStored) {
			extra = append(extra, storage.SetOperation(r.store.entryKey(r.set.Extra.Name()), entry))
		}
	}
	if err := r.store.Save(ctx, r.tally, extra...); err != nil {
		r.countError(ctx, "storage", 1)
		return fmt.Errorf("%s: storing the state: %w", r.set.ID.Type(), err)
	}
	if extra != nil {
		r.extraStored = entry
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
