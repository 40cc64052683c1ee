// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// readFile reads one complete file from where the pipeline last accepted it to its end, holding the file's
// flock throughout: Gatekeeper does not prune a locked admission segment. busy is true when Gatekeeper holds the
// lock; the file is read at a later poll.
//
// Delivery is at least once: the offset is recorded (with storage) only after the pipeline accepted the records
// before it, and a file is done (an audit run remembered, an admission segment deleted) only after all of its
// records were accepted. A collector that dies re-sends at most the batch it was handing over.
func (g *gkExport) readFile(channel, dir string, c *gkChannel, kind, name string) (busy bool, err error) {
	path := filepath.Join(dir, name)
	f, err := gatekeeperexport.OpenFile(path)
	// Listed a moment ago as a regular file: pruned since, or replaced by what is none (a FIFO renamed over it).
	if gone, replaced := errors.Is(err, fs.ErrNotExist), errors.Is(err, gatekeeperexport.ErrNotRegular); gone || replaced {
		why := "it was deleted before it was read"
		if replaced {
			why = "it was replaced before it was read by what is not a regular file"
			g.r.rejected(&g.limiter, exportListener(channel), reasonNotRegularFile, 1, zap.String("file", name), zap.Error(err))
			c.odd[name] = struct{}{}
		}
		g.deletedUnread(channel, c, kind, name, why)
		delete(c.listed, name)
		if kind == gatekeeperexport.FileKindAudit {
			c.AuditDone, c.AuditDoneInode, c.Audit = name, 0, nil
			g.save(channel, c, false)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Closing releases the lock.
	defer f.Close()
	if err := flock(f); err != nil {
		if errors.Is(err, errLocked) {
			return true, nil
		}
		return false, fmt.Errorf("flock: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	p := c.progress(kind)
	if *p == nil || (*p).Name != name || (*p).Inode != gatekeeperexport.Inode(fi) || (*p).Size != fi.Size() {
		*p = &gkProgress{Name: name, Inode: gatekeeperexport.Inode(fi), Size: fi.Size()}
	}
	rd := &gkRead{g: g, channel: channel, listener: exportListener(channel), c: c, p: *p}
	// A complete file does not change: what is appended after it was opened is not Gatekeeper's, and is not
	// read, so that a file that never ends holds nothing up.
	size := fi.Size()
	if kind == gatekeeperexport.FileKindAudit && g.cfg.AuditChanges {
		if rd.changes, err = g.scanRun(io.NewSectionReader(f, 0, size), c.violations, name); err != nil {
			return false, err
		}
	}
	done, err := rd.readLines(io.NewSectionReader(f, rd.p.Offset, size-rd.p.Offset))
	if err != nil || !done {
		return false, err
	}
	if rd.changes != nil && !rd.resolve() {
		return false, nil
	}
	switch kind {
	case gatekeeperexport.FileKindAdmission:
		// Its end is recorded: a collector that dies before the removal deletes it at the next start without
		// sending it again.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		c.Admission = nil
		g.save(channel, c, false)
	case gatekeeperexport.FileKindAudit:
		c.AuditDone, c.AuditDoneInode, c.Audit = name, gatekeeperexport.Inode(fi), nil
		if rd.changes != nil {
			c.violations = rd.changes.next
		}
		g.save(channel, c, rd.changes != nil)
	}
	delete(c.listed, name)
	g.r.telemetry.ReceiverDecisionLogsExportFiles.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("channel", channel), attribute.String("file_kind", kind)))
	return false, nil
}

// gkRead is the reading of one file.
type gkRead struct {
	g                 *gkExport
	channel, listener string
	c                 *gkChannel
	p                 *gkProgress
	// changes filters an audit run's violations to those new or changed (audit_changes); nil otherwise.
	changes *auditChanges
	b       batch
	lines   arena
}

// readLines reads from the file's recorded offset to its end; false when the receiver stopped first. While a
// batch is handed over, the records of the next one are built and the one after is read and decoded: building
// records takes about three times as long as decoding them, and a file read in one goroutine would keep one
// core busy where a socket's connections keep all busy. At most three batches are held: one being handed over,
// one being built, one being filled.
func (rd *gkRead) readLines(f io.Reader) (bool, error) {
	h := rd.handOver()
	ok, err := rd.decodeLines(f, h)
	// Every batch handed over is accepted (and recorded) or the receiver stopped before this returns.
	return h.wait() && ok, err
}

func (rd *gkRead) decodeLines(f io.Reader, h *gkHandover) (bool, error) {
	cfg := rd.g.r.cfg
	// The handover records the progress from here on; what is read of it stays as it was when reading began.
	name, resolved := rd.p.Name, rd.p.Resolved
	cr := &countingReader{r: f, n: rd.p.Offset}
	br := bufio.NewReaderSize(cr, readBufferSize)
	// pos is the offset of the next byte to be read from br.
	pos := func() int64 { return cr.n - int64(br.Buffered()) }
	b := new(batch)
	flush := func(offset int64) bool {
		b = h.hand(b, offset, resolved)
		rd.lines.reset()
		return b != nil
	}
	lineNo := 0
	for {
		start := pos()
		line, tooLong, err := readLine(br, rd.g.cfg.MaxLineBytes, &rd.lines)
		switch {
		case tooLong:
			lineNo++
			rd.g.r.rejected(&rd.g.limiter, rd.listener, "line_too_long", 1, zap.String("file", name),
				zap.Int64("offset", start), zap.Int("max_line_bytes", rd.g.cfg.MaxLineBytes))
		default:
			if line = bytes.TrimSpace(line); len(line) > 0 {
				lineNo++
				if ev, cost, ok := rd.g.r.decodeLine(decodeExportLine, rd.listener, &rd.g.limiter, line, lineNo); ok && rd.keep(&ev) {
					if !b.fits(cfg, cost) && !flush(start) {
						return false, nil
					}
					b.add(ev, cost)
				}
			}
		}
		if len(b.events) >= cfg.MaxBatchRecords && !flush(pos()) {
			return false, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return flush(pos()), nil
			}
			return false, err
		}
	}
}

// keep filters an audit run's violations to the changes (audit_changes) and marks them; every event otherwise.
func (rd *gkRead) keep(ev *decode.Event) bool {
	if rd.changes == nil {
		return true
	}
	st, changed := rd.changes.state(ev)
	ev.State = st
	return changed
}

// flush hands the batch to the pipeline and then records how far the file was accepted: offset, and the
// resolved records after its end. False when the receiver stopped first.
func (rd *gkRead) flush(offset int64, resolved int) bool {
	if !rd.accept(&rd.b, offset, resolved) {
		return false
	}
	rd.lines.reset()
	return true
}

// accept hands b to the pipeline, empties it, and records offset and resolved as accepted; false when the
// receiver stopped first.
func (rd *gkRead) accept(b *batch, offset int64, resolved int) bool {
	if len(b.events) > 0 {
		if !rd.g.r.deliver(rd.g.obs, FormatGatekeeper, rd.listener, &rd.g.limiter, b.events) {
			return false
		}
		b.reset()
	}
	rd.record(offset, resolved)
	return true
}

// record notes that the file was accepted up to offset, and resolved records after its end.
func (rd *gkRead) record(offset int64, resolved int) {
	if offset != rd.p.Offset || resolved != rd.p.Resolved {
		rd.p.Offset, rd.p.Resolved = offset, resolved
		rd.g.save(rd.channel, rd.c, false)
	}
}

// gkHandover hands the batches of one file to the pipeline in order, in a goroutine of its own, while the
// records of the next batch are built in another. It alone records the file's progress (rd.p, rd.c) until wait
// returns.
type gkHandover struct {
	rd *gkRead
	// batches holds the batch whose records are built while the one before is handed over.
	batches chan gkHanded
	// free are the emptied batches, for the reader to fill again.
	free    chan *batch
	done    chan struct{}
	stopped atomic.Bool
}

// gkHanded is a batch and how far the file is accepted once it is.
type gkHanded struct {
	b        *batch
	offset   int64
	resolved int
	// built receives the batch's records, built in a turn of max_concurrent_batches that is given back once
	// they were handed over; nil for a batch without records.
	built chan plog.Logs
}

func (rd *gkRead) handOver() *gkHandover {
	h := &gkHandover{rd: rd, batches: make(chan gkHanded, 1), free: make(chan *batch, 3), done: make(chan struct{})}
	h.free <- new(batch)
	h.free <- new(batch)
	go h.run()
	return h
}

func (h *gkHandover) run() {
	defer close(h.done)
	rd, r := h.rd, h.rd.g.r
	for hb := range h.batches {
		// Once the receiver stopped, what follows is dropped: it is read again after a restart.
		if hb.built != nil {
			ld, n := <-hb.built, len(hb.b.events)
			if !h.stopped.Load() && !r.retry(rd.listener, &rd.g.limiter, n, func() error {
				return r.send(r.stopping, rd.g.obs, FormatGatekeeper, ld, n)
			}) {
				h.stopped.Store(true)
			}
			r.building.release()
		}
		if !h.stopped.Load() {
			rd.record(hb.offset, hb.resolved)
		}
		hb.b.reset()
		h.free <- hb.b
	}
}

// hand starts building the records of b, after which the file is accepted up to offset, queues it behind the
// batch being handed over, and returns an empty batch to fill; nil once the receiver stopped. The turns of
// max_concurrent_batches are taken in the file's order and each is held until its batch was handed over, so
// that no batch waits for a turn that a later one holds; the pipeline gets the batches as they were read.
func (h *gkHandover) hand(b *batch, offset int64, resolved int) *batch {
	hb := gkHanded{b: b, offset: offset, resolved: resolved}
	if len(b.events) > 0 {
		r := h.rd.g.r
		if !r.building.acquire(r.stopping) {
			return nil
		}
		hb.built = make(chan plog.Logs, 1)
		go func() { hb.built <- r.toLogs(b.events) }()
	}
	h.batches <- hb
	next := <-h.free
	if h.stopped.Load() {
		return nil
	}
	return next
}

// wait waits until every batch handed over was accepted, or dropped because the receiver stopped; false then.
func (h *gkHandover) wait() bool {
	close(h.batches)
	<-h.done
	return !h.stopped.Load()
}

// decodeExportLine decodes a line of an export file; the start and completion markers of an audit run are no
// decision.
func decodeExportLine(raw []byte) (decode.Event, error) {
	ev, err := decode.Gatekeeper(raw)
	if err != nil && isAuditMarker(raw) {
		return decode.Event{}, decode.ErrNotDecision
	}
	return ev, err
}

func isAuditMarker(raw []byte) bool {
	if _, ok := jsonscan.Lookup(raw, "eventType"); ok {
		return false
	}
	v, ok := jsonscan.Lookup(raw, "message")
	if !ok {
		return false
	}
	msg, _ := jsonscan.String(v)
	return msg == auditStartedMsg || msg == auditCompletedMsg
}

// countingReader counts the bytes read through it, from a starting offset.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
