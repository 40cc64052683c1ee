// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
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
	// Audit and Admission are the files of each kind being read, and how far the pipeline accepted them.
	Audit     *gkProgress `json:"pa,omitempty"`
	Admission *gkProgress `json:"pd,omitempty"`

	// violations are the violations of the last complete audit run (audit_changes), by their key. Persisted
	// apart, and only when a run ends, since they are many and change once a run.
	violations map[policyresult.Hash]gkViolation
	// listed are the files seen in the directory and not read yet: one missing at the next poll was deleted
	// before it was read.
	listed map[string]string
	// gapChecked is the audit run whose distance to AuditDone was checked for a gap.
	gapChecked string
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

// gkViolation is a violation of the last complete audit run: its ID, to tell a changed violation, and its event,
// to write the resolved record when it disappears.
type gkViolation struct {
	ID   policyresult.Hash `json:"i"`
	Body json.RawMessage   `json:"b"`
}

// auditRead says whether the audit run f was read: it is older than the last run read, or that run's file
// (whose inode is unknown when it was not read, or recorded by an older version).
func (c *gkChannel) auditRead(f gkFile) bool {
	return f.name < c.AuditDone || (f.name == c.AuditDone && (c.AuditDoneInode == 0 || f.inode == c.AuditDoneInode))
}

func (c *gkChannel) progress(kind string) **gkProgress {
	if kind == fileKindAudit {
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

func (s *gkStore) load(ctx context.Context, channel string) (*gkChannel, error) {
	c := &gkChannel{}
	if s == nil {
		return c, nil
	}
	raw, err := s.client.Get(ctx, progressKey(channel))
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if raw != nil {
		if err := json.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("storage: progress of channel %s: %w", channel, err)
		}
	}
	if raw, err = s.client.Get(ctx, violationsKey(channel)); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &c.violations); err != nil {
			return nil, fmt.Errorf("storage: violations of channel %s: %w", channel, err)
		}
	}
	return c, nil
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
		v, err := json.Marshal(c.violations)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(violationsKey(channel), v))
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
