// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// auditChanges compares an audit run with the complete run before it (audit_changes). Audit runs are
// snapshots: a violation that stays is reported by every run, so only the new and changed ones are emitted, and a
// resolved record for each that the run no longer reports, as the report watcher does with reports.
type auditChanges struct {
	// prev are the violations of the previous complete run, next those of this one: an unchanged violation
	// keeps its entry, a new or changed one gets its event of this run.
	prev, next map[policyresult.Hash]gkViolation
	runID      string
	runTime    time.Time
}

// scanRun reads a whole audit run for its violations, before any of its records is sent: which violations
// disappeared is known only at the run's end, and the run is read again from its recorded offset after a
// restart, so the comparison must not depend on how far it was sent. It holds a key and an ID per violation, and
// the events of the new and changed ones.
func (g *gkExport) scanRun(f io.Reader, prev map[policyresult.Hash]gkViolation, name string) (*auditChanges, error) {
	a := &auditChanges{prev: prev, next: map[policyresult.Hash]gkViolation{}, runID: auditRunID(name)}
	a.runTime, _ = auditRunTime(name)
	br := bufio.NewReaderSize(f, readBufferSize)
	var lines arena
	for {
		line, tooLong, err := readLine(br, g.cfg.MaxLineBytes, &lines)
		if line = bytes.TrimSpace(line); !tooLong && len(line) > 0 {
			// Malformed lines are counted when the run is sent.
			if ev, derr := decodeGatekeeper(line); derr == nil {
				h := ev.decision.ViolationHashes()
				if p, ok := prev[h.Key]; ok && p.ID == h.ID {
					a.next[h.Key] = p
				} else {
					a.next[h.Key] = gkViolation{ID: h.ID, Body: append(json.RawMessage(nil), ev.body...)}
				}
			}
		}
		lines.reset()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return a, nil
			}
			return nil, err
		}
	}
}

// state tells whether a violation of the run is new or changed since the previous run; false when it is not.
func (a *auditChanges) state(ev *decoded) (policyresult.State, bool) {
	h := ev.decision.ViolationHashes()
	p, ok := a.prev[h.Key]
	switch {
	case !ok:
		return policyresult.StateNew, true
	case p.ID != h.ID:
		return policyresult.StateChanged, true
	}
	return policyresult.StateNone, false
}

// gone are the keys of the violations of the previous run that this one no longer reports, in a fixed order, so
// that a restarted collector knows which of them it sent.
func (a *auditChanges) gone() []policyresult.Hash {
	var keys []policyresult.Hash
	for k := range a.prev {
		if _, ok := a.next[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y policyresult.Hash) int { return bytes.Compare(x[:], y[:]) })
	return keys
}

// resolvedEvent is the record of a violation this run no longer reports: its last event, at this run's time,
// with an ID of its own.
func (a *auditChanges) resolvedEvent(key policyresult.Hash) (decoded, error) {
	ev, err := decodeGatekeeper(a.prev[key].Body)
	if err != nil {
		return decoded{}, err
	}
	if !a.runTime.IsZero() {
		ev.decision.Timestamp = a.runTime
	}
	ev.decision.ID = policyresult.ContentDecisionID(ev.decision.Kind, a.runID, string(policyresult.StateResolved), key.String())
	ev.state = policyresult.StateResolved
	return ev, nil
}

// resolve sends the resolved records of the run after its violations, from the first one not yet accepted;
// false when the receiver stopped first.
func (rd *gkRead) resolve() bool {
	cfg := rd.g.r.cfg
	gone := rd.changes.gone()
	for i := rd.p.Resolved; i < len(gone); i++ {
		ev, err := rd.changes.resolvedEvent(gone[i])
		if err != nil {
			// Stored state that no longer decodes: a newer version's, or damaged.
			rd.g.r.rejected(&rd.g.limiter, rd.listener, "event", 1, zap.String("file", rd.p.Name), zap.Error(err))
			continue
		}
		cost, err := rd.g.r.price(&ev)
		if err != nil {
			rd.g.r.rejected(&rd.g.limiter, rd.listener, "event_too_large", 1, zap.String("file", rd.p.Name), zap.Error(err))
			continue
		}
		if !rd.b.fits(cfg, cost) && !rd.flush(rd.p.Offset, i) {
			return false
		}
		rd.b.add(ev, cost)
		if len(rd.b.events) >= cfg.MaxBatchRecords && !rd.flush(rd.p.Offset, i+1) {
			return false
		}
	}
	return rd.flush(rd.p.Offset, len(gone))
}
