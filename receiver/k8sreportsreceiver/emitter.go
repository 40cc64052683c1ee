// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"maps"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonpdata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

// batchItem is one report's records on their way to the pipeline, and the state to commit once all of them
// were accepted.
type batchItem struct {
	key     objKey
	kind    string
	records []outRecord
	planned int            // records placed in batches so far; the builder's alone
	next    *emittedReport // nil: the report is gone
	isNew   bool
	// unchanged: the same version as the one committed, read again (a relist, a restart), with nothing to
	// emit; its state is not written to storage again.
	unchanged bool
}

// batch is what one ConsumeLogs call carries: records[from:to] of each part's report. A report with more
// records than fit is continued in the next batch, so only the last part may be incomplete, and no other
// report is added after it.
type batch struct {
	parts []batchPart
	n     int // records
	bytes int // of their bodies
	// states are the states the reports in this batch will have once it is committed.
	states map[objKey]*emittedReport
	// logs are the batch's records, built ahead for its first attempt.
	logs plog.Logs
}

type batchPart struct {
	item     *batchItem
	from, to int
}

// rest is the report whose records continue in the next batch, if any.
func (b *batch) rest() *batchItem {
	if n := len(b.parts); n > 0 && b.parts[n-1].to < len(b.parts[n-1].item.records) {
		return b.parts[n-1].item
	}
	return nil
}

// emit turns waiting reports into records in two stages, so that the next batch is diffed and built while the
// pipeline takes this one: a builder (buildBatches) and this goroutine, which hands each batch to the
// pipeline and commits it. It commits a report's new state only after the pipeline accepted all its records,
// which may take several batches, and retries a refused batch until it is accepted or the receiver stops: what
// was not accepted is not remembered as emitted, so it is emitted again after a restart or by the next leader.
func (r *reportsReceiver) emit(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	batches := make(chan *batch)
	inflight := newInflight()
	go r.buildBatches(ctx, batches, inflight)
	defer func() {
		cancel()
		for range batches { //nolint:revive // drains the builder until it stopped
		}
	}()
	retry := newBackoff(time.Second, 30*time.Second)
	for b := range batches {
		if b.n > 0 && !r.consume(ctx, b, retry) {
			return
		}
		r.commit(ctx, b)
		inflight.done(b)
		r.tracker.nudge()
	}
}

// buildBatches is the builder: it fills batches from the tracker and sends them, at most one waiting while
// another is consumed, until the tracker closes or ctx ends. A report taken while an earlier version is still
// in a batch not committed is diffed against that version's state (inflight). The tracker counts the emitter
// idle only while the builder waits and every batch it sent was committed.
func (r *reportsReceiver) buildBatches(ctx context.Context, out chan<- *batch, inflight *inflight) {
	defer close(out)
	var rest *batchItem // a report whose records continue in the next batch
	for {
		b := r.nextBatch(rest, inflight)
		if len(b.parts) == 0 {
			return // the tracker closed
		}
		if b.n > 0 {
			b.logs = r.toLogs(b)
		}
		rest = b.rest()
		inflight.add(b)
		select {
		case out <- b:
		case <-ctx.Done():
			return
		}
	}
}

// nextBatch fills a batch up to max_batch_records and max_batch_bytes: first with the rest of the report
// continued from the last batch, then with waiting reports, blocking only while the batch is empty.
func (r *reportsReceiver) nextBatch(rest *batchItem, inflight *inflight) *batch {
	b := &batch{states: map[objKey]*emittedReport{}}
	if rest != nil {
		b.fill(rest, r.cfg)
	}
	for b.open(r.cfg) {
		k, u, prev, ok := r.tracker.take(len(b.parts) == 0, inflight.empty)
		if !ok {
			break
		}
		if next, inBatch := b.states[k]; inBatch {
			prev = next // an earlier version in this batch is committed before this one
		} else if next, sent := inflight.state(k); sent {
			prev = next // so is one in a batch on its way
		}
		b.fill(r.prepare(k, u, prev), r.cfg)
	}
	return b
}

// inflight are the batches the builder sent that were not committed yet, and the states they will commit.
type inflight struct {
	mu      sync.Mutex
	batches int
	states  map[objKey]*emittedReport
}

func newInflight() *inflight {
	return &inflight{states: map[objKey]*emittedReport{}}
}

func (f *inflight) add(b *batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	maps.Copy(f.states, b.states)
}

// done is called once b was committed: its states are the tracker's now, unless a later batch replaces them.
func (f *inflight) done(b *batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches--
	for k, st := range b.states {
		if cur, ok := f.states[k]; ok && cur == st {
			delete(f.states, k)
		}
	}
}

func (f *inflight) empty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batches == 0
}

// state is the state a batch on its way will commit for k.
func (f *inflight) state(k objKey) (*emittedReport, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[k]
	return st, ok
}

// prepare diffs the latest version of a report against what was emitted for it.
func (r *reportsReceiver) prepare(k objKey, u *update, prev *emittedReport) *batchItem {
	it := &batchItem{key: k, kind: u.kind, isNew: prev == nil}
	switch {
	case u.deleted:
		it.records, _ = diff(prev, nil, true, false, r.cfg.EmitResolved, r.cfg.ClusterName)
	case u.refused != nil:
		it.next = prev.refusing(u.rv, *u.refused)
	default:
		it.records, it.next = diff(prev, u.results, false, u.partial, r.cfg.EmitResolved, r.cfg.ClusterName)
		it.next.UID, it.next.ResourceVersion = u.uid, u.rv
		if u.adopt {
			it.records = nil
		}
		it.unchanged = len(it.records) == 0 && prev != nil && prev.refused == nil &&
			prev.UID == u.uid && prev.ResourceVersion == u.rv && u.rv != ""
	}
	return it
}

// open says whether the batch takes another report: it has room, and its last report is complete.
func (b *batch) open(cfg *Config) bool {
	if n := len(b.parts); n > 0 && b.parts[n-1].to < len(b.parts[n-1].item.records) {
		return false
	}
	return b.n < cfg.MaxBatchRecords && b.bytes < cfg.MaxBatchBytes
}

// fill adds as many of the item's remaining records as fit; a record larger than max_batch_bytes goes alone.
func (b *batch) fill(it *batchItem, cfg *Config) {
	from, to := it.planned, it.planned
	for to < len(it.records) && b.n < cfg.MaxBatchRecords {
		size := it.records[to].Body.Size()
		if b.n > 0 && b.bytes+size > cfg.MaxBatchBytes {
			break
		}
		b.n++
		b.bytes += size
		to++
	}
	it.planned = to
	b.parts = append(b.parts, batchPart{item: it, from: from, to: to})
	b.states[it.key] = it.next
}

// consume hands the batch to the pipeline until it is accepted; false when the receiver stopped first.
func (r *reportsReceiver) consume(ctx context.Context, b *batch, retry *backoff) bool {
	for attempt := 0; ; attempt++ {
		ld := b.logs
		if attempt > 0 {
			ld = r.toLogs(b)
		}
		obsCtx := r.obsrecv.StartLogsOp(ctx)
		err := r.next.ConsumeLogs(obsCtx, ld)
		r.obsrecv.EndLogsOp(obsCtx, metadata.Type.String(), b.n, err)
		switch {
		case err == nil:
			r.sync.records.Add(int64(b.n))
			r.problems.clearSource("consume")
			retry.reset()
			return true
		case consumererror.IsPermanent(err):
			// Retrying cannot help; the records are dropped downstream, so remember them as emitted.
			r.problems.count("", "consume")
			r.set.Logger.Error("The pipeline permanently rejected result records", zap.Int("records", b.n), zap.Error(err))
			return true
		}
		r.problems.set("consume", "", "consume", err)
		if !retry.wait(ctx) {
			return false
		}
	}
}

// toLogs builds the batch's records. It is rebuilt for every later attempt, because processors may have changed
// the records of a refused attempt; the bodies exist only as long as the batch does.
func (r *reportsReceiver) toLogs(b *batch) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), r.cfg.ClusterName)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	lrs := sl.LogRecords()
	lrs.EnsureCapacity(b.n)
	now := pcommon.NewTimestampFromTime(time.Now())
	var body []byte
	for _, p := range b.parts {
		for j := p.from; j < p.to; j++ {
			rec := p.item.records[j]
			lr := lrs.AppendEmpty()
			policyresult.WriteHashedLogRecord(&rec.Result.Result, rec.hashes, lr)
			lr.SetObservedTimestamp(now)
			if rec.Body.IsZero() {
				continue
			}
			body = rec.Body.AppendTo(body[:0])
			if err := jsonpdata.SetValue(body, lr.Body()); err != nil {
				// The body was decoded once already, so this cannot happen; keep the text rather than lose it.
				lr.Body().SetStr(string(body))
			}
		}
	}
	return ld
}

// commit counts the batch's records and commits the state of each report whose records were all accepted,
// in memory and in storage.
func (r *reportsReceiver) commit(ctx context.Context, b *batch) {
	b.logs = plog.Logs{} // the records are the pipeline's now
	changes := make(map[objKey]*emittedReport, len(b.parts))
	var byState [3]int64
	for _, p := range b.parts {
		it := p.item
		for j := p.from; j < p.to; j++ {
			if it.records[j].Scan != nil {
				continue // a scan run, not a result
			}
			switch it.records[j].State {
			case policyresult.StateNew:
				byState[0]++
			case policyresult.StateChanged:
				byState[1]++
			case policyresult.StateResolved:
				byState[2]++
			}
		}
		if p.to < len(it.records) {
			continue // its records continue in the next batch
		}
		r.tracker.commit(it.key, it.next)
		if !it.unchanged {
			changes[it.key] = it.next
		}
		r.refusals.update(it.key, it.next)
		switch {
		case it.isNew && it.next != nil:
			r.telemetry.ReceiverK8sReportsReports.Add(ctx, 1)
			r.reportsCounted++
		case !it.isNew && it.next == nil:
			r.telemetry.ReceiverK8sReportsReports.Add(ctx, -1)
			r.reportsCounted--
		}
	}
	for i, st := range []policyresult.State{policyresult.StateNew, policyresult.StateChanged, policyresult.StateResolved} {
		if byState[i] > 0 {
			r.telemetry.ReceiverK8sReportsResults.Add(ctx, byState[i], metric.WithAttributes(attribute.String("state", string(st))))
		}
	}
	if r.store == nil {
		return
	}
	// What a failed write left out goes with this one, so that skipping unchanged reports never leaves the
	// storage behind what was emitted.
	for k, e := range r.unsaved {
		if _, newer := changes[k]; !newer {
			changes[k] = e
		}
	}
	if len(changes) == 0 {
		return
	}
	if err := r.store.save(ctx, changes); err != nil {
		r.unsaved = changes
		r.problems.set("storage", "", "storage", err)
		return
	}
	r.unsaved = nil
	r.problems.clearSource("storage")
}
