// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// gkChannel is what the gatekeeper_export input knows of one channel directory. The persisted part says what
// the pipeline accepted, so that a restarted collector resumes there.
type gkChannel struct {
	// AuditDone is the file name of the newest audit run read to its end; older runs are not read again.
	AuditDone string `json:"a,omitempty"`
	// AuditDoneInode is the inode of that run's file. Gatekeeper names a run after the second it started, and
	// a run started in the same second as the one before (a start its ticker had held back while the previous
	// run overran) is renamed over it: a file of that name with another inode is a run not read yet.
	AuditDoneInode uint64 `json:"ai,omitempty"`
	// Interval is the spacing of consecutive audit runs as last seen, by which a run deleted before it was read
	// shows as a gap in the sequence of run IDs.
	Interval time.Duration `json:"t,omitempty"`
	// ListedAt is when the directory was listed last (Unix seconds): a run missing from the sequence of run
	// IDs was written after it (README.md, "Gaps"), which bounds how many can be missing.
	ListedAt int64 `json:"l,omitempty"`
	// Audit and Admission are the files of each kind being read, and how far the pipeline accepted them.
	Audit     *gkProgress `json:"pa,omitempty"`
	Admission *gkProgress `json:"pd,omitempty"`

	// violations are the violations of the last complete audit run (audit_changes). Persisted apart, and only
	// when a run ends, since they are many and change once a run.
	violations *gkViolations
	// listed are the files seen in the directory and not read yet: one missing at the next poll was deleted
	// before it was read.
	listed map[string]string
	// gapChecked is the audit run whose distance to AuditDone was checked for a gap.
	gapChecked string
	// odd are the names of the last listing that are not Gatekeeper's (or not regular files), each counted
	// when it appeared.
	odd map[string]struct{}
	// unseen is how many more files of each kind may be counted as deleted unread until the next listing:
	// no more can have been there than Gatekeeper keeps.
	unseen map[string]int
}

// gkProgress is how far into one file the pipeline accepted records.
type gkProgress struct {
	Name string `json:"n"`
	// Inode and Size tell the file from another one of the same name: Gatekeeper's files never change once
	// complete, so a different one is read from its start.
	Inode uint64 `json:"i,omitempty"`
	Size  int64  `json:"s"`
	// Offset is the end of the last line whose record (if any) was accepted.
	Offset int64 `json:"o"`
	// Resolved counts the resolved records accepted after an audit run's last line (audit_changes).
	Resolved int `json:"r,omitempty"`
}

// auditRead says whether the audit run f was read: it started before the last run read, or is that run's file
// (whose inode is unknown when it was not read, or recorded by an older version).
func (c *gkChannel) auditRead(f gkFile) bool {
	return gatekeeperexport.AuditRunAfter(c.AuditDone, f.name) ||
		(f.name == c.AuditDone && (c.AuditDoneInode == 0 || f.inode == c.AuditDoneInode))
}

// check says what in progress read from storage cannot be: this version writes none of it, so the state is
// damaged (or written by a version that read names Gatekeeper does not write).
func (c *gkChannel) check(now time.Time) error {
	if t, ok := gatekeeperexport.AuditRunTime(c.AuditDone); c.AuditDone != "" && (!ok || t.After(now.Add(gatekeeperexport.AuditIDFutureTolerance))) {
		return fmt.Errorf("last run read %q is no audit run's file, or one from the future", c.AuditDone)
	}
	if c.Interval < 0 || c.ListedAt < 0 {
		return fmt.Errorf("negative interval %d or listing time %d", c.Interval, c.ListedAt)
	}
	for _, k := range []string{gatekeeperexport.FileKindAudit, gatekeeperexport.FileKindAdmission} {
		p := *c.progress(k)
		if p == nil {
			continue
		}
		if kind, _ := gatekeeperexport.ParseName(p.Name); kind != k {
			return fmt.Errorf("%s file being read %q is no %s file", k, p.Name, k)
		}
		if p.Offset < 0 || p.Offset > p.Size || p.Resolved < 0 {
			return fmt.Errorf("%s file %s: offset %d of %d bytes, %d resolved", k, p.Name, p.Offset, p.Size, p.Resolved)
		}
	}
	return nil
}

func (c *gkChannel) progress(kind string) **gkProgress {
	if kind == gatekeeperexport.FileKindAudit {
		return &c.Audit
	}
	return &c.Admission
}

// gkStore keeps the channels' state in a storage extension; a nil store keeps nothing, and a restarted
// collector starts over (README.md, "Gatekeeper's disk export").
type gkStore struct {
	client storage.Client
}

func progressKey(channel string) string   { return "gatekeeper_export/" + channel + "/progress" }
func violationsKey(channel string) string { return "gatekeeper_export/" + channel + "/violations" }

// damagedSuffix marks the storage key under which damaged state is kept aside, for whoever looks into it.
const damagedSuffix = ".damaged"

// gkDamage is state read from storage that could not be used: kept aside under key+damagedSuffix and dropped.
type gkDamage struct {
	key string
	raw []byte
	err error
}

// load reads a channel's state. State that does not decode, or says what cannot be, is kept aside and the
// channel goes on without it, from the safest position there is: progress from nothing read (the runs on
// disk are sent again, at least once), the previous run's violations from none (the next run is sent whole, as
// new).
func (s *gkStore) load(ctx context.Context, channel string) (*gkChannel, []gkDamage, error) {
	c := &gkChannel{}
	if s == nil {
		return c, nil, nil
	}
	var damaged []gkDamage
	raw, err := s.client.Get(ctx, progressKey(channel))
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %w", err)
	}
	if raw != nil {
		err := json.Unmarshal(raw, c)
		if err == nil {
			err = c.check(time.Now())
		}
		if err != nil {
			c = &gkChannel{}
			damaged = append(damaged, gkDamage{key: progressKey(channel), raw: raw, err: err})
		}
	}
	if raw, err = s.client.Get(ctx, violationsKey(channel)); err != nil {
		return nil, nil, fmt.Errorf("storage: %w", err)
	}
	if len(raw) > 0 {
		if c.violations, err = unmarshalViolations(raw); err != nil {
			damaged = append(damaged, gkDamage{key: violationsKey(channel), raw: raw, err: err})
		}
	}
	var ops []*storage.Operation
	for _, d := range damaged {
		ops = append(ops, storage.SetOperation(d.key+damagedSuffix, d.raw), storage.DeleteOperation(d.key))
	}
	if len(ops) > 0 {
		if err := s.client.Batch(ctx, ops...); err != nil {
			return nil, nil, fmt.Errorf("storage: keeping damaged state aside: %w", err)
		}
	}
	return c, damaged, nil
}

// saveProgress records how far the pipeline accepted; with runEnded, also the violations of the run just read,
// in the same transaction, so that a run is either wholly done or resumed.
func (s *gkStore) saveProgress(ctx context.Context, channel string, c *gkChannel, runEnded bool) error {
	if s == nil {
		return nil
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ops := []*storage.Operation{storage.SetOperation(progressKey(channel), raw)}
	if runEnded {
		ops = append(ops, storage.SetOperation(violationsKey(channel), c.violations.marshal()))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

func (s *gkStore) close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.client.Close(ctx)
}
