// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeepertest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/gatekeepertest"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The messages that open and close an audit run's file, and the event type of each violation in it.
const (
	AuditStarted     = "audit is started"
	AuditCompleted   = "audit is completed"
	ViolationAudited = "violation_audited"
)

// Message is one line Gatekeeper writes (its pkg/export/util.ExportMsg).
type Message struct {
	ID                    string            `json:"id,omitempty"`
	Details               any               `json:"details,omitempty"`
	EventType             string            `json:"eventType,omitempty"`
	Group                 string            `json:"group,omitempty"`
	Version               string            `json:"version,omitempty"`
	Kind                  string            `json:"kind,omitempty"`
	Name                  string            `json:"name,omitempty"`
	Namespace             string            `json:"namespace,omitempty"`
	Message               string            `json:"message,omitempty"`
	EnforcementAction     string            `json:"enforcementAction,omitempty"`
	ConstraintAnnotations map[string]string `json:"constraintAnnotations,omitempty"`
	ResourceGroup         string            `json:"resourceGroup,omitempty"`
	ResourceAPIVersion    string            `json:"resourceAPIVersion,omitempty"`
	ResourceKind          string            `json:"resourceKind,omitempty"`
	ResourceNamespace     string            `json:"resourceNamespace,omitempty"`
	ResourceName          string            `json:"resourceName,omitempty"`
	ResourceLabels        map[string]string `json:"resourceLabels,omitempty"`
}

// Run is one complete audit run as Gatekeeper wrote it.
type Run struct {
	// ID is the audit id, the run's start time (RFC 3339, UTC, seconds); the file is named after it with ':'
	// replaced by '_'.
	ID   string
	Path string
	// Inode tells two runs of one ID apart: Gatekeeper renames a run that started in the same second as the
	// one before over it.
	Inode uint64
	// Lines are the file's lines as written, without their newlines.
	Lines [][]byte
	// Started and Completed are the first and the last line; Violations are the lines between them.
	Started, Completed Message
	Violations         []Message
}

// Start is the run's start time, from its id.
func (r Run) Start() time.Time {
	ts, _ := time.Parse(time.RFC3339, r.ID)
	return ts
}

// ResourceNames are "namespace/name" of the resources of the run's violations, sorted.
func (r Run) ResourceNames() []string {
	out := make([]string, 0, len(r.Violations))
	for _, v := range r.Violations {
		out = append(out, v.ResourceNamespace+"/"+v.ResourceName)
	}
	sort.Strings(out)
	return out
}

// ReadRun reads the complete run in the .log file at path.
func ReadRun(path string) (Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return Run{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Run{}, err
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return Run{}, err
	}
	run := Run{Path: path, ID: strings.ReplaceAll(strings.TrimSuffix(filepath.Base(path), ".log"), "_", ":")}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		run.Inode = st.Ino
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		return run, fmt.Errorf("%s: the last line is not terminated", path)
	}
	run.Lines = bytes.Split(raw[:len(raw)-1], []byte("\n"))
	if len(run.Lines) < 2 {
		return run, fmt.Errorf("%s: %d lines, want at least the start and completed markers", path, len(run.Lines))
	}
	msgs := make([]Message, len(run.Lines))
	for i, l := range run.Lines {
		if err := json.Unmarshal(l, &msgs[i]); err != nil {
			return run, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		if msgs[i].ID != run.ID {
			return run, fmt.Errorf("%s line %d: id %q, want the file's %q", path, i+1, msgs[i].ID, run.ID)
		}
	}
	run.Started, run.Completed, run.Violations = msgs[0], msgs[len(msgs)-1], msgs[1:len(msgs)-1]
	if run.Started.Message != AuditStarted || run.Completed.Message != AuditCompleted {
		return run, fmt.Errorf("%s: first and last messages %q, %q; want %q, %q", path,
			run.Started.Message, run.Completed.Message, AuditStarted, AuditCompleted)
	}
	for i, v := range run.Violations {
		if v.EventType != ViolationAudited {
			return run, fmt.Errorf("%s line %d: event type %q, want %q", path, i+2, v.EventType, ViolationAudited)
		}
	}
	return run, nil
}

// Runs reads the complete runs in ChannelDir, oldest first. A run Gatekeeper deletes while it is read (it keeps
// only the newest MaxAuditResults) is left out.
func (g *Gatekeeper) Runs() ([]Run, error) {
	paths, err := filepath.Glob(filepath.Join(g.ChannelDir(), "*.log"))
	if err != nil {
		return nil, err
	}
	// Audit ids are fixed-width UTC times: names sort by start time.
	sort.Strings(paths)
	var runs []Run
	for _, p := range paths {
		run, err := ReadRun(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// WaitRun waits for the first complete run that started after after (in a later second: audit ids have a
// resolution of a second) and returns it. Everything the API server held at after is in that run.
func (g *Gatekeeper) WaitRun(t testing.TB, after time.Time) Run {
	t.Helper()
	var found Run
	g.waitFor(t, 90*time.Second, func() error {
		runs, err := g.Runs()
		if err != nil {
			return err
		}
		for _, r := range runs {
			if r.Start().After(after.Truncate(time.Second)) {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no complete audit run started after %s in %s (%d runs)", after.UTC().Format(time.RFC3339), g.ChannelDir(), len(runs))
	})
	return found
}
