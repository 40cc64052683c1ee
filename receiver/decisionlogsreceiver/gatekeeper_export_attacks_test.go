// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package decisionlogsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"
)

// Files that are not Gatekeeper's in the export directory, which is shared with whatever else may write there
// (Gatekeeper makes it writable by all): each must be skipped and counted, never stop the reader or skip
// Gatekeeper's own runs.

var exportListenerName = "gatekeeper_export:" + channel

// plantFIFO makes a FIFO in dir under a name no reader lists, for a rename to put where a run was.
func plantFIFO(t *testing.T, dir string) string {
	t.Helper()
	fifo := filepath.Join(dir, "planted.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o666))
	return fifo
}

// waitPollOrUnblock waits for the end of a poll; a reader stuck in the open of a FIFO is let go (a writer opens
// and closes it) so that the receiver can stop, and the test fails.
func (g *gkTest) waitPollOrUnblock(fifo string) {
	g.t.Helper()
	select {
	case <-g.polled:
		return
	case <-time.After(5 * time.Second):
	}
	if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
	g.waitPoll()
	g.t.Fatal("the reader waited in open for a writer of the FIFO")
}

func TestGatekeeperExportRefusesAFIFORenamedOverARun(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.MaxBatchRecords = 1
	dir := filepath.Join(path, channel)
	r0, r1, r2 := runAt(0), runAt(1), runAt(2)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"), auditViolation(r0, "c1", "shop", "p2", "deny"))
	run1 := writeAuditRun(t, dir, r1, auditViolation(r1, "c1", "shop", "p1", "deny"))
	fifo := plantFIFO(t, dir)
	sink := &refusingSink{}
	sink.gated()
	g := startGK(t, cfg, nil, sink)
	// The first record of run 0 is being handed over: the directory was listed, run 1 is not opened yet.
	<-sink.entered
	require.NoError(t, os.Rename(fifo, run1))
	close(sink.gate)
	g.waitPollOrUnblock(run1)
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2"}, g.seen())
	assert.Equal(t, int64(1), g.rejectedCount(exportListenerName, "not_regular_file"))
	assert.Equal(t, int64(1), g.gaps(), "run 1 was replaced before it was read")

	writeAuditRun(t, dir, r2, auditViolation(r2, "c1", "shop", "p3", "deny"))
	g.tick <- time.Now()
	g.waitPollOrUnblock(run1)
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2", "audit c1 shop/p3"}, g.seen(), "the reader goes on")
	assert.Equal(t, int64(1), g.rejectedCount(exportListenerName, "not_regular_file"), "counted once while it stays")
	assert.Equal(t, int64(1), g.gaps())
}

func TestGatekeeperExportSkipsWhatIsNotARegularFile(t *testing.T) {
	cfg, path := gkConfig(t)
	dir := filepath.Join(path, channel)
	r0, r2 := runAt(0), runAt(2)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p1", "deny"))
	// Named as runs: a FIFO, a directory, a symlink to a run.
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "2026-11-24T08_01_00Z.log"), 0o666))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "2026-11-24T08_01_30Z.log"), 0o700))
	target := writeAuditRun(t, t.TempDir(), r2, auditViolation(r2, "c1", "shop", "secret", "deny"))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "2026-11-24T08_01_45Z.log")))
	g := startGK(t, cfg, nil, nil)
	g.waitPollOrUnblock(filepath.Join(dir, "2026-11-24T08_01_00Z.log"))
	g.poll()
	writeAuditRun(t, dir, r2, auditViolation(r2, "c1", "shop", "p2", "deny"))
	g.poll()
	assert.Equal(t, []string{"audit c1 shop/p1", "audit c1 shop/p2"}, g.seen())
	assert.Equal(t, int64(3), g.rejectedCount(exportListenerName, "not_regular_file"), "each counted once")
}

func TestGatekeeperExportReadsOnlyGatekeepersNames(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.Storage = &filestoragetest.ID
	storeDir := t.TempDir()
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p0", "deny"))
	forged := auditViolation(runAt(9), "c1", "shop", "forged", "deny") + "\n"
	// Names that sort after the audit IDs, or almost spell one; none is Gatekeeper's.
	crafted := []string{
		"debug.log", "zz.log", "2026-11-24T08_00_30.5Z.log", "2026-11-24T08:00:40Z.log", "2026-11-24T08_00_50+00_00.log",
		"admission-20261124T080000.000000000Z-XYZ.log", "admission-x.log", "9999-12-31T23_59_59Z.log",
	}
	for _, name := range crafted {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(forged), 0o666))
	}
	g := restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p0"}, g.seen())
	assert.Equal(t, int64(len(crafted)), g.rejectedCount(exportListenerName, "unknown_file"))

	var want []string
	for i := 1; i <= 3; i++ {
		id := runAt(i)
		writeAuditRun(t, dir, id, auditViolation(id, "c1", "shop", "p"+id[15:16], "deny"))
		want = append(want, "audit c1 shop/p"+id[15:16])
	}
	g.poll()
	assert.Equal(t, append([]string{"audit c1 shop/p0"}, want...), g.seen(), "every run after them")
	assert.Equal(t, int64(len(crafted)), g.rejectedCount(exportListenerName, "unknown_file"), "counted when they appear")
	g.stop()

	r4 := runAt(4)
	writeAuditRun(t, dir, r4, auditViolation(r4, "c1", "shop", "p4", "deny"))
	g = restart(t, cfg, storeDir)
	assert.Equal(t, []string{"audit c1 shop/p4"}, g.seen(), "after a restart too")
	assert.Zero(t, g.gaps())
}

func TestGatekeeperExportAuditChangesAreNotForged(t *testing.T) {
	cfg, path := gkConfig(t)
	cfg.GatekeeperExport.Get().AuditChanges = true
	dir := filepath.Join(path, channel)
	r0, r1, r2 := runAt(0), runAt(1), runAt(2)
	var v0 []string
	var want []string
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		v0 = append(v0, auditViolation(r0, "c1", "shop", p, "deny"))
		want = append(want, "audit c1 shop/"+p+" new")
	}
	writeAuditRun(t, dir, r0, v0...)
	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	require.Equal(t, want, g.seen())

	// An empty file that sorts after the runs, then one named as a run but not written by Gatekeeper: neither
	// is a snapshot that lacks the violations.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "zz.log"), nil, 0o666))
	g.poll()
	assert.Equal(t, want, g.seen(), "no resolved record for a file that is no run")
	fake := filepath.Join(dir, "2026-11-24T08_01_00Z.log")
	require.NoError(t, os.WriteFile(fake, []byte(auditViolation(r1, "c1", "shop", "f", "deny")+"\n"), 0o666))
	g.poll()
	assert.Equal(t, append(want, "audit c1 shop/f new"), g.seen(), "a run without Gatekeeper's markers resolves nothing")
	assert.Equal(t, int64(1), g.rejectedCount(exportListenerName, "incomplete_run"))

	var v2 []string
	for _, p := range []string{"a", "b", "c", "d", "f"} {
		v2 = append(v2, auditViolation(r2, "c1", "shop", p, "deny"))
	}
	writeAuditRun(t, dir, r2, v2...)
	g.poll()
	assert.Equal(t, append(want, "audit c1 shop/f new", "audit c1 shop/e resolved"), g.seen(),
		"a real run resolves what it no longer reports, and only that")
}

// Runs that come and go as Gatekeeper's never would: a gap counted from their IDs is bounded by how many runs
// Gatekeeper can have written since the directory was listed, at most one a second.
func TestGatekeeperExportGapsAreBoundedByWhatCanExist(t *testing.T) {
	cfg, path := gkConfig(t)
	dir := filepath.Join(path, channel)
	r0 := runAt(0)
	run0 := writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "p0", "deny"))
	g := startGK(t, cfg, nil, nil)
	g.waitPoll()
	require.Len(t, g.seen(), 1)

	// The last run read is pruned; two files a nanosecond apart half an hour later (1.8e12 "missing runs" at
	// that interval), then two a second apart an hour later.
	require.NoError(t, os.Remove(run0))
	for _, name := range []string{"2026-11-24T08_30_00.000000001Z.log", "2026-11-24T08_30_00.000000002Z.log"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o666))
	}
	g.poll()
	assert.Zero(t, g.gaps(), "no run IDs")
	for _, at := range []time.Duration{time.Hour, time.Hour + time.Second} {
		id := auditID(t0.Add(at))
		writeAuditRun(t, dir, id, auditViolation(id, "c1", "shop", "p1", "deny"))
	}
	g.poll()
	assert.LessOrEqual(t, g.gaps(), int64(2), "no more runs than can have been written since the last listing")
	assert.Positive(t, g.gaps())

	// Files created and deleted between two polls: no more than Gatekeeper keeps.
	var names []string
	for i := range 50 {
		id := auditID(t0.Add(2*time.Hour + time.Duration(i)*time.Second))
		names = append(names, writeAuditRun(t, dir, id))
	}
	before := g.gaps()
	release := holdLock(t, names[0])
	g.poll()
	for _, n := range names {
		require.NoError(t, os.Remove(n))
	}
	release()
	g.poll()
	assert.LessOrEqual(t, g.gaps()-before, int64(gatekeeperexport.MaxAuditRunsOnDisk+2))
}

// storeClient opens the receiver's storage as the collector would, with the receiver stopped.
func storeClient(t *testing.T, storeDir string) (storage.Client, func()) {
	t.Helper()
	ext := filestoragetest.Start(t, storeDir)
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindReceiver,
		component.MustNewID("decision_logs"), "")
	require.NoError(t, err)
	return client, func() {
		require.NoError(t, client.Close(context.Background()))
		require.NoError(t, ext.Shutdown(context.Background()))
	}
}

func TestGatekeeperExportGoesOnPastDamagedState(t *testing.T) {
	for name, damage := range map[string]map[string]string{
		"undecodable": {"progress": `{"a":`, "violations": "\x00garbage"},
		"impossible":  {"progress": `{"a":"zz.log","pa":{"n":"2026-11-24T08_00_00Z.log","s":10,"o":99,"r":-1}}`},
		"future":      {"progress": `{"a":"9999-12-31T23_59_59Z.log"}`},
		"old format":  {"violations": `{"00112233445566778899aabbccddeeff":{"i":"00112233445566778899aabbccddeeff","b":{}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, path := gkConfig(t)
			cfg.GatekeeperExport.Get().AuditChanges = true
			cfg.Storage = &filestoragetest.ID
			storeDir := t.TempDir()
			dir := filepath.Join(path, channel)
			r0 := runAt(0)
			writeAuditRun(t, dir, r0, auditViolation(r0, "c1", "shop", "a", "deny"))
			g := restart(t, cfg, storeDir)
			require.Equal(t, []string{"audit c1 shop/a new"}, g.seen())
			g.stop()

			client, closeStore := storeClient(t, storeDir)
			for k, v := range damage {
				require.NoError(t, client.Set(context.Background(), "gatekeeper_export/"+channel+"/"+k, []byte(v)))
			}
			closeStore()

			r1 := runAt(1)
			writeAuditRun(t, dir, r1, auditViolation(r1, "c1", "shop", "a", "deny"), auditViolation(r1, "c1", "shop", "b", "deny"))
			g = restart(t, cfg, storeDir)
			assert.Contains(t, g.seen(), "audit c1 shop/b new", "the channel goes on")
			assert.Equal(t, int64(len(damage)), g.rejectedCount(exportListenerName, "damaged_state"))
			if ev := g.host.Last(); ev != nil {
				assert.NotEqual(t, componentstatus.StatusRecoverableError, ev.Status(), "%v", ev.Err())
			}
			g.stop()

			client, closeStore = storeClient(t, storeDir)
			defer closeStore()
			for k, v := range damage {
				kept, err := client.Get(context.Background(), "gatekeeper_export/"+channel+"/"+k+".damaged")
				require.NoError(t, err)
				assert.Equal(t, v, string(kept), "kept aside")
			}
		})
	}
}
