// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// These helpers write the files of Gatekeeper's disk export driver as pkg/export/disk does: an audit run as
// <audit ID with ':' as '_'>.txt under an exclusive flock, the started marker, one violation_audited line per
// violation, the completed marker, then unlocked, closed and renamed to .log; an admission segment as
// admission-<UTC time>-<hex>.open under its lock, renamed to .log when rotated.

// auditID is the ID of an audit run that started at t, as Gatekeeper spells it (RFC 3339, seconds, UTC).
func auditID(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// auditViolation is one violation_audited line of the run id.
func auditViolation(id, constraint, namespace, pod, action string) string {
	return fmt.Sprintf(`{"id":%q,"details":{"missing_labels":["owner"]},"eventType":"violation_audited",`+
		`"group":"constraints.gatekeeper.sh","version":"v1beta1","kind":"K8sRequiredLabels","name":%q,`+
		`"message":"you must provide labels: {\"owner\"}","enforcementAction":%q,"resourceAPIVersion":"v1",`+
		`"resourceKind":"Pod","resourceNamespace":%q,"resourceName":%q}`, id, constraint, action, namespace, pod)
}

func marker(id, msg string) string {
	b, _ := json.Marshal(map[string]string{"id": id, "message": msg})
	return string(b)
}

// writeAuditRun writes one complete audit run into channel dir and returns its .log path.
func writeAuditRun(t testing.TB, dir, id string, violations ...string) string {
	t.Helper()
	f, txt := startAuditRun(t, dir, id)
	lines := append([]string{marker(id, auditStartedMsg)}, violations...)
	lines = append(lines, marker(id, auditCompletedMsg))
	_, err := f.WriteString(strings.Join(lines, "\n") + "\n")
	require.NoError(t, err)
	return finishAuditRun(t, f, txt)
}

// startAuditRun opens and locks the .txt of a run that is being written.
func startAuditRun(t testing.TB, dir, id string) (*os.File, string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o770))
	txt := filepath.Join(dir, strings.ReplaceAll(id, ":", "_")+".txt")
	f, err := os.OpenFile(txt, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	return f, txt
}

func finishAuditRun(t testing.TB, f *os.File, txt string) string {
	t.Helper()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	require.NoError(t, f.Close())
	log := strings.TrimSuffix(txt, ".txt") + ".log"
	require.NoError(t, os.Rename(txt, log))
	return log
}

// admissionViolation is one violation_admission line of request uid.
func admissionViolation(uid, namespace, name string) string {
	return fmt.Sprintf(`{"id":%q,"eventType":"violation_admission","group":"constraints.gatekeeper.sh",`+
		`"version":"v1beta1","kind":"K8sRequiredLabels","name":"deployments-must-have-owner",`+
		`"message":"you must provide labels: {\"owner\"}","enforcementAction":"deny","resourceGroup":"apps",`+
		`"resourceAPIVersion":"v1","resourceKind":"Deployment","resourceNamespace":%q,"resourceName":%q,`+
		`"operation":"CREATE","requestUsername":"alice","timestamp":"2026-11-24T08:00:00Z"}`, uid, namespace, name)
}

// writeAdmissionSegment writes one rotated admission segment opened at ts and returns its .log path. Segments
// are written with distinct modification times, as Gatekeeper's are, so that their order does not rest on names.
func writeAdmissionSegment(t testing.TB, dir string, ts time.Time, lines ...string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o770))
	name := gatekeeperexport.AdmissionPrefix + ts.UTC().Format("20060102T150405.000000000Z") + "-0123456789abcdef"
	open := filepath.Join(dir, name+".open")
	f, err := os.OpenFile(open, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o660)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	require.NoError(t, f.Close())
	log := strings.TrimSuffix(open, ".open") + ".log"
	require.NoError(t, os.Rename(open, log))
	require.NoError(t, os.Chtimes(log, ts, ts))
	return log
}

// holdLock takes the file's flock through a descriptor of its own, as another process (Gatekeeper's retention)
// would: flock locks belong to open file descriptions, so this one excludes the receiver's.
func holdLock(t testing.TB, path string) (release func()) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	return func() { f.Close() }
}
