// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// auditChanges compares an audit run with the complete run before it (audit_changes). Audit runs are
// snapshots: a violation that stays is reported by every run, so only the new and changed ones are emitted, and a
// resolved record for each that the run no longer reports, as the report watcher does with reports.
type auditChanges struct {
	// prev are the violations of the previous complete run, next those of this one.
	prev, next *gkViolations
	runID      string
	runTime    time.Time
	// complete says the run is a whole snapshot: it begins with Gatekeeper's started marker and ends with its
	// completed marker, both of its ID. Only then are the violations it lacks resolved; a file that is not (a
	// run Gatekeeper did not write) adds its violations to the previous run's instead of replacing them.
	complete bool
}

// scanRun reads a whole audit run for its violations, before any of its records is sent: which violations
// disappeared is known only at the run's end, and the run is read again from its recorded offset after a
// restart, so the comparison must not depend on how far it was sent.
func (g *gkExport) scanRun(f io.Reader, prev *gkViolations, name string) (*auditChanges, error) {
	a := &auditChanges{prev: prev, runID: gatekeeperexport.AuditRunID(name)}
	a.runTime, _ = gatekeeperexport.AuditRunTime(name)
	b := newViolationsBuilder(a.runID)
	br := bufio.NewReaderSize(f, readBufferSize)
	var lines arena
	// first and last are the markers of the first and the last line ("" for another line).
	var first, last string
	seen := false
	for {
		line, tooLong, err := readLine(br, g.cfg.MaxLineBytes, &lines)
		if line = bytes.TrimSpace(line); tooLong || len(line) > 0 {
			marker := ""
			if !tooLong {
				marker = auditMarkerOf(line, a.runID)
				// Malformed lines are counted when the run is sent.
				if ev, derr := decode.Gatekeeper(line); derr == nil {
					b.add(ev.Decision.ViolationHashes().Key, &ev.Decision)
				}
			}
			if !seen {
				first, seen = marker, true
			}
			last = marker
		}
		// lines is not reset: nothing keeps a line once it was scanned (the builder copies what it keeps), so
		// a full chunk is dropped for a new one as it fills, not one chunk a line.
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, err
			}
			break
		}
	}
	a.complete = first == auditStartedMsg && last == auditCompletedMsg
	if !a.complete {
		// Those of the previous run first, so that the run's own replace them.
		next := newViolationsBuilder(a.runID)
		for i := range prev.len() {
			next.addFrom(prev, i)
		}
		for i := range b.v.keys {
			next.addFrom(&b.v, i)
		}
		b = next
	}
	a.next = b.build()
	return a, nil
}

// auditMarkerOf is the message of line when it is a marker of run id; "" otherwise.
func auditMarkerOf(line []byte, id string) string {
	if !isAuditMarker(line) {
		return ""
	}
	v, _ := jsonscan.Lookup(line, "id")
	if s, _ := jsonscan.String(v); s != id {
		return ""
	}
	v, _ = jsonscan.Lookup(line, "message")
	msg, _ := jsonscan.String(v)
	return msg
}

// state tells whether a violation of the run is new or changed since the previous run; false when it is not.
func (a *auditChanges) state(ev *decode.Event) (policyresult.State, bool) {
	i, ok := a.prev.find(ev.Decision.ViolationHashes().Key)
	switch {
	case !ok:
		return policyresult.StateNew, true
	case a.prev.action(i) != ev.Decision.Action:
		return policyresult.StateChanged, true
	}
	return policyresult.StateNone, false
}

// gone are the violations of the previous run that this one no longer reports, as indexes into prev, in a
// fixed order (by key), so that a restarted collector knows which of them it sent. None unless the run is
// complete.
func (a *auditChanges) gone() []int {
	if !a.complete {
		return nil
	}
	var out []int
	for i := range a.prev.len() {
		if _, ok := a.next.find(a.prev.keys[i]); !ok {
			out = append(out, i)
		}
	}
	return out
}

// resolvedEvent is the record of violation i of the previous run, which this run no longer reports: its event,
// at this run's time, with an ID of its own.
func (a *auditChanges) resolvedEvent(i int) (decode.Event, error) {
	raw, err := a.prev.event(i)
	if err != nil {
		return decode.Event{}, err
	}
	ev, err := decode.Gatekeeper(raw)
	if err != nil {
		return decode.Event{}, err
	}
	key := a.prev.keys[i]
	if ev.Decision.ViolationHashes().Key != key {
		return decode.Event{}, fmt.Errorf("%w: the fields of violation %s do not match its key", errDamaged, key)
	}
	if !a.runTime.IsZero() {
		ev.Decision.Timestamp = a.runTime
	}
	ev.Decision.ID = policyresult.ContentDecisionID(ev.Decision.Kind, a.runID, string(policyresult.StateResolved), key.String())
	ev.State = policyresult.StateResolved
	return ev, nil
}

// resolve sends the resolved records of the run after its violations, from the first one not yet accepted;
// false when the receiver stopped first.
func (rd *gkRead) resolve() bool {
	cfg := rd.g.r.cfg
	gone := rd.changes.gone()
	if !rd.changes.complete {
		rd.g.r.rejected(&rd.g.limiter, rd.listener, reasonIncompleteRun, 1, zap.String("file", rd.p.Name),
			zap.String("why", "it lacks Gatekeeper's started or completed marker of its audit ID: no violation is resolved by it"))
	}
	for n := max(rd.p.Resolved, 0); n < len(gone); n++ {
		ev, err := rd.changes.resolvedEvent(gone[n])
		if err != nil {
			// Stored state that does not decode: damaged.
			rd.g.r.rejected(&rd.g.limiter, rd.listener, reasonDamagedState, 1, zap.String("file", rd.p.Name), zap.Error(err))
			continue
		}
		cost, err := rd.g.r.price(&ev)
		if err != nil {
			rd.g.r.rejected(&rd.g.limiter, rd.listener, "event_too_large", 1, zap.String("file", rd.p.Name), zap.Error(err))
			continue
		}
		if !rd.b.fits(cfg, cost) && !rd.flush(rd.p.Offset, n) {
			return false
		}
		rd.b.add(ev, cost)
		if len(rd.b.events) >= cfg.MaxBatchRecords && !rd.flush(rd.p.Offset, n+1) {
			return false
		}
	}
	return rd.flush(rd.p.Offset, len(gone))
}
