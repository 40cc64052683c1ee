// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package gatekeeperexport knows the files of Gatekeeper's disk export: the names Gatekeeper gives them, and
// how a reader opens one without following a link or blocking on what is no regular file.
package gatekeeperexport // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"

import (
	"strings"
	"time"
)

// Gatekeeper's disk export driver (pkg/export/disk) writes into <path>/<channel>/: one file per audit run,
// <audit ID with ':' as '_'>.txt under an exclusive flock, renamed to .log when the run completed, the newest
// maxAuditResults of them kept; and (3.24) admission segments, admission-<UTC time>-<hex>.open renamed to .log
// (or .recovered.log) when rotated, which the reader deletes once read and which Gatekeeper prunes unread past
// its limits, though not while a reader holds their flock. Only .log files are complete, and only those named
// as Gatekeeper names them are read (this file).
const (
	FileKindAudit     = "audit"
	FileKindAdmission = "admission"
	ReadyExt          = ".log"
	AdmissionPrefix   = "admission-"
)

// The names Gatekeeper's disk export gives the complete files of a channel directory. Any other .log name is
// not Gatekeeper's: read as a run, a name that sorts after the audit IDs would mark every later run as read.
const (
	// auditRunLayout is an audit run's file: its audit ID, the UTC second the run started as time.RFC3339
	// formats it (pkg/audit/manager.go), with ':' written '_' (pkg/export/disk, v3.23.1).
	auditRunLayout = "2006-01-02T15_04_05Z" + ReadyExt
	// admissionTimeLayout is the time in an admission segment's name, admission-<time>-<16 hex digits>.log,
	// or .recovered.log for one Gatekeeper recovered after a crash (pkg/export/disk, 3.24).
	admissionTimeLayout = "20060102T150405.000000000Z"
	admissionRandomHex  = 16
	admissionRecovered  = ".recovered"
)

// What Gatekeeper can write, which bounds what the reader counts as deleted unread (README.md, "Gaps").
const (
	// Gatekeeper keeps at most this many complete files of a kind in a channel directory: maxAuditResults is at
	// most 5 (pkg/export/disk maxAllowedAuditRuns), and a run just renamed is there until the pruning that
	// follows it; admission segments are pruned past 20 (defaultMaxAdmissionResults).
	MaxAuditRunsOnDisk         = 5 + 1
	MaxAdmissionSegmentsOnDisk = 20 + 1
	// MinAuditInterval is the shortest --audit-interval (whole seconds), and audit IDs are whole seconds.
	MinAuditInterval = time.Second
	// AuditIDFutureTolerance is how far after the reader's clock an audit ID may be: Gatekeeper names a run
	// after its start, on the clock of the node both run on, so a later ID is not Gatekeeper's.
	AuditIDFutureTolerance = time.Minute
)

// ParseName tells what a .log file of a channel directory is: an audit run (and when it started), an
// admission segment, or "" for a name Gatekeeper does not write.
func ParseName(name string) (kind string, run time.Time) {
	if t, ok := AuditRunTime(name); ok {
		return FileKindAudit, t
	}
	if isAdmissionSegment(name) {
		return FileKindAdmission, time.Time{}
	}
	return "", time.Time{}
}

// AuditRunTime is the start of the audit run whose file is name, which its ID is; false unless name is
// spelled exactly as Gatekeeper spells it, so that two names never denote one run and the order of runs is
// the order of their times.
func AuditRunTime(name string) (time.Time, bool) {
	t, err := time.Parse(auditRunLayout, name)
	if err != nil || t.Format(auditRunLayout) != name {
		return time.Time{}, false
	}
	return t, true
}

// AuditRunID is the audit ID of an audit run's file.
func AuditRunID(name string) string {
	return strings.ReplaceAll(strings.TrimSuffix(name, ReadyExt), "_", ":")
}

// AuditRunAfter says whether the run of file a started after that of file b; every run is after "".
func AuditRunAfter(a, b string) bool {
	ta, _ := AuditRunTime(a)
	tb, ok := AuditRunTime(b)
	return !ok || ta.After(tb)
}

func isAdmissionSegment(name string) bool {
	rest, ok := strings.CutPrefix(name, AdmissionPrefix)
	if !ok {
		return false
	}
	if rest, ok = strings.CutSuffix(rest, ReadyExt); !ok {
		return false
	}
	rest = strings.TrimSuffix(rest, admissionRecovered)
	stamp, random, ok := strings.Cut(rest, "-")
	if !ok || len(random) != admissionRandomHex || strings.Trim(random, "0123456789abcdef") != "" {
		return false
	}
	t, err := time.Parse(admissionTimeLayout, stamp)
	return err == nil && t.Format(admissionTimeLayout) == stamp
}
