// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonpdata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/metadata"
)

type decisionsReceiver struct {
	cfg       *Config
	set       receiver.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder

	// stopping ends the stream connections' retries and reads.
	stopping context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup

	listeners []*ndjsonListener
	server    *http.Server
	// building holds the max_concurrent_batches turns to build records and hand them to the pipeline.
	building slots

	gk *gkExport
	// gkTick, when set (tests), drives gatekeeper_export's polls instead of poll_interval; gkPolled hears of
	// each poll's end.
	gkTick   <-chan time.Time
	gkPolled chan<- struct{}
}

func newReceiver(cfg *Config, set receiver.Settings, next consumer.Logs) (*decisionsReceiver, error) {
	cfg = cfg.withDefaults()
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &decisionsReceiver{
		cfg: cfg, set: set, next: next, telemetry: tb, stopping: ctx, stop: cancel,
		building: newSlots(cfg.MaxConcurrentBatches),
	}, nil
}

func (r *decisionsReceiver) Start(ctx context.Context, host component.Host) error {
	for i := range r.cfg.NDJSON {
		l, err := r.listen(&r.cfg.NDJSON[i])
		if err != nil {
			return errors.Join(err, r.Shutdown(ctx))
		}
		r.listeners = append(r.listeners, l)
	}
	if opa := r.cfg.OPA.Get(); opa != nil {
		if err := r.startOPA(ctx, host, opa); err != nil {
			return errors.Join(err, r.Shutdown(ctx))
		}
	}
	if g := r.cfg.GatekeeperExport.Get(); g != nil {
		if err := r.startGatekeeperExport(ctx, host, g); err != nil {
			return errors.Join(err, r.Shutdown(ctx))
		}
	}
	return nil
}

func (r *decisionsReceiver) Shutdown(ctx context.Context) error {
	r.stop()
	var errs []error
	if r.server != nil {
		errs = append(errs, r.server.Shutdown(ctx))
	}
	for _, l := range r.listeners {
		errs = append(errs, l.close())
	}
	// A second Shutdown (the collector's, after a Start that failed and shut down) has nothing left to close.
	r.server, r.listeners = nil, nil
	r.wg.Wait()
	if r.gk != nil {
		errs = append(errs, r.gk.close(ctx))
		r.gk = nil
	}
	r.telemetry.Shutdown()
	return errors.Join(errs...)
}

// rejected counts and logs (rate-limited) input that could not be used.
func (r *decisionsReceiver) rejected(lim *logLimiter, listener, reason string, n int, fields ...zap.Field) {
	r.telemetry.ReceiverDecisionLogsRejected.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("listener", listener), attribute.String("reason", reason)))
	if suppressed, ok := lim.allow(); ok {
		r.set.Logger.Warn("Rejected decision input", append(fields, zap.String("listener", listener),
			zap.String("reason", reason), zap.Int("suppressed_since_last", suppressed))...)
	}
}

// toLogs builds the records of a batch of decisions.
func (r *decisionsReceiver) toLogs(batch []decode.Event) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), r.cfg.ClusterName)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	lrs := sl.LogRecords()
	lrs.EnsureCapacity(len(batch))
	now := pcommon.NewTimestampFromTime(time.Now())
	for i := range batch {
		ev := &batch[i]
		lr := lrs.AppendEmpty()
		policyresult.WriteDecisionLogRecord(&ev.Decision, lr)
		if ev.State != policyresult.StateNone {
			policyresult.WriteDecisionState(lr, ev.State)
		}
		lr.SetObservedTimestamp(now)
		if err := jsonpdata.SetValue(ev.Body, lr.Body()); err != nil {
			lr.Body().SetStr(string(ev.Body))
		}
		if ev.Input == nil {
			continue
		}
		lr.Attributes().PutInt(policyresult.AttrDecisionInputBytes, int64(len(ev.Input)))
		if !ev.WithInput || lr.Body().Type() != pcommon.ValueTypeMap {
			lr.Attributes().PutBool(policyresult.AttrDecisionInputOmit, true)
			continue
		}
		if err := jsonpdata.SetValue(ev.Input, lr.Body().Map().PutEmpty("input")); err != nil {
			lr.Body().Map().Remove("input")
			lr.Attributes().PutBool(policyresult.AttrDecisionInputOmit, true)
		}
	}
	return ld
}

// consume builds the records of a batch and hands them to the pipeline through the receiver's observability
// wrapper, in one of the max_concurrent_batches turns, waited for while ctx lasts.
func (r *decisionsReceiver) consume(ctx context.Context, obs *receiverhelper.ObsReport, format string, batch []decode.Event) error {
	if !r.building.acquire(ctx) {
		return ctx.Err()
	}
	defer r.building.release()
	return r.send(ctx, obs, format, r.toLogs(batch), len(batch))
}

// send hands n built records to the pipeline through the receiver's observability wrapper.
func (r *decisionsReceiver) send(ctx context.Context, obs *receiverhelper.ObsReport, format string, ld plog.Logs, n int) error {
	ctx = obs.StartLogsOp(ctx)
	err := r.next.ConsumeLogs(ctx, ld)
	obs.EndLogsOp(ctx, format, n, err)
	return err
}

// deliver hands a batch to the pipeline, retrying while it refuses it, until it is accepted or refused for good
// (counted as refused by listener); false when the receiver stops first.
func (r *decisionsReceiver) deliver(obs *receiverhelper.ObsReport, format, listener string, lim *logLimiter, batch []decode.Event) bool {
	return r.retry(listener, lim, len(batch), func() error { return r.consume(r.stopping, obs, format, batch) })
}

// retry repeats attempt, handing n records over, with a growing delay while the pipeline refuses them, until it
// accepts them or refuses them for good (counted as refused by listener); false when the receiver stops first.
func (r *decisionsReceiver) retry(listener string, lim *logLimiter, n int, attempt func() error) bool {
	delay := 10 * time.Millisecond
	for {
		err := attempt()
		if err == nil {
			return true
		}
		if consumererror.IsPermanent(err) {
			r.rejected(lim, listener, "refused", n, zap.Error(err))
			return true
		}
		t := time.NewTimer(delay)
		select {
		case <-r.stopping.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// logLimiter lets one log line through per interval and counts the rest, so that a flood of bad input cannot
// flood the collector's own logs.
type logLimiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *logLimiter) allow() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.last) >= time.Second {
		n := l.suppressed
		l.last, l.suppressed = now, 0
		return n, true
	}
	l.suppressed++
	return 0, false
}
