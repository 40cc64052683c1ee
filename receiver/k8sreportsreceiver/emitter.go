package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/jsonpdata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

// batchItem is one report's share of a batch: its records and the state to commit once they are accepted.
type batchItem struct {
	key     objKey
	kind    string
	records []outRecord
	next    *emittedReport // nil: the report is gone
	isNew   bool
}

// emit is the single goroutine that turns waiting reports into records. It commits a report's new state only
// after the pipeline accepted its records, and retries a refused batch until it is accepted or the receiver
// stops: what was not accepted is not remembered as emitted, so it is emitted again after a restart.
func (r *reportsReceiver) emit(ctx context.Context) {
	retry := newBackoff(time.Second, 30*time.Second)
	for {
		items, n := r.nextBatch()
		if items == nil {
			return
		}
		if n > 0 && !r.consume(ctx, items, n, retry) {
			return
		}
		r.commit(ctx, items)
	}
}

func (r *reportsReceiver) nextBatch() ([]batchItem, int) {
	var items []batchItem
	n := 0
	for n < r.cfg.MaxBatchRecords {
		k, u, prev, ok := r.tracker.take(len(items) == 0)
		if !ok {
			break
		}
		it := batchItem{key: k, kind: u.kind, isNew: prev == nil}
		if u.deleted {
			it.records, _ = diff(prev, nil, true, false, r.cfg.EmitResolved, r.cfg.ClusterName)
		} else {
			it.records, it.next = diff(prev, u.results, false, u.partial, r.cfg.EmitResolved, r.cfg.ClusterName)
			it.next.UID, it.next.ResourceVersion = u.uid, u.rv
			if u.adopt {
				it.records = nil
			}
		}
		n += len(it.records)
		items = append(items, it)
	}
	return items, n
}

// consume hands the batch to the pipeline until it is accepted; false when the receiver stopped first.
func (r *reportsReceiver) consume(ctx context.Context, items []batchItem, n int, retry *backoff) bool {
	for {
		ld := r.toLogs(items, n)
		obsCtx := r.obsrecv.StartLogsOp(ctx)
		err := r.next.ConsumeLogs(obsCtx, ld)
		r.obsrecv.EndLogsOp(obsCtx, metadata.Type.String(), n, err)
		switch {
		case err == nil:
			r.problems.clearSource("consume")
			retry.reset()
			return true
		case consumererror.IsPermanent(err):
			// Retrying cannot help; the records are dropped downstream, so remember them as emitted.
			r.problems.count("", "consume")
			r.set.Logger.Error("The pipeline permanently rejected result records", zap.Int("records", n), zap.Error(err))
			return true
		}
		r.problems.set("consume", "", "consume", err)
		if !retry.wait(ctx) {
			return false
		}
	}
}

// toLogs builds the batch's records. It is rebuilt for every attempt, because processors may have changed the
// records of a refused attempt.
func (r *reportsReceiver) toLogs(items []batchItem, n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), r.cfg.ClusterName)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	lrs := sl.LogRecords()
	lrs.EnsureCapacity(n)
	now := pcommon.NewTimestampFromTime(time.Now())
	for i := range items {
		for j := range items[i].records {
			rec := &items[i].records[j]
			lr := lrs.AppendEmpty()
			policyresult.WriteLogRecord(&rec.result, lr)
			lr.SetObservedTimestamp(now)
			if rec.body != nil {
				if err := jsonpdata.SetValue(rec.body, lr.Body()); err != nil {
					// The body was decoded once already, so this cannot happen; keep the text rather than lose it.
					lr.Body().SetStr(string(rec.body))
				}
			}
		}
	}
	return ld
}

func (r *reportsReceiver) commit(ctx context.Context, items []batchItem) {
	changes := make(map[objKey]*emittedReport, len(items))
	var byState [3]int64
	for i := range items {
		it := &items[i]
		r.tracker.commit(it.key, it.next)
		changes[it.key] = it.next
		switch {
		case it.isNew && it.next != nil:
			r.telemetry.ReceiverK8sReportsReports.Add(ctx, 1)
			r.reportsCounted++
		case !it.isNew && it.next == nil:
			r.telemetry.ReceiverK8sReportsReports.Add(ctx, -1)
			r.reportsCounted--
		}
		for j := range it.records {
			switch it.records[j].result.State {
			case policyresult.StateNew:
				byState[0]++
			case policyresult.StateChanged:
				byState[1]++
			case policyresult.StateResolved:
				byState[2]++
			}
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
	if err := r.store.save(ctx, changes); err != nil {
		r.problems.set("storage", "", "storage", err)
		return
	}
	r.problems.clearSource("storage")
}
