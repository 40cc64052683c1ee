// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// observeSync tees the receiver's log into an observer, to read the fields of the initial sync's line.
func observeSync(tr *testReceiver) *observer.ObservedLogs {
	core, logs := observer.New(zapcore.InfoLevel)
	tr.rcv.set.Logger = tr.rcv.set.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, core)
	}))
	return logs
}

func syncFields(t *testing.T, logs *observer.ObservedLogs) map[string]any {
	t.Helper()
	// The tee writes to the receiver's own log first: waitLog can see the line just before this observer has it.
	require.Eventually(t, func() bool { return logs.FilterMessage(msgInitialSync).Len() > 0 }, 10*time.Second, time.Millisecond)
	lines := logs.FilterMessage(msgInitialSync).All()
	require.Len(t, lines, 1)
	return lines[0].ContextMap()
}

// TestInitialSyncIsLoggedOnceCaughtUp checks the line an operator waits for: once every report listed at start
// was emitted and committed, with how many reports and records; after a restart on the same storage where
// nothing changed, the same line with no record.
func TestInitialSyncIsLoggedOnceCaughtUp(t *testing.T) {
	srv := startFakeServer(t)
	applyPodReports(t, srv, "fail", "r1", "r2", "r3")
	storageDir := t.TempDir()

	tr := newTestReceiver(t, fakeConfig(), srv.Kubeconfig(t), storageDir, nil, nil)
	tr.rcv.retry = fakeRetry
	logs := observeSync(tr)
	tr.start()
	tr.waitLog(msgInitialSync)
	got := syncFields(t, logs)
	assert.EqualValues(t, 3, got["reports"])
	assert.EqualValues(t, len(tr.records()), got["records"], "the line counts every record emitted before it")
	assert.NotEmpty(t, tr.records())
	tr.stop()

	again := newTestReceiver(t, fakeConfig(), srv.Kubeconfig(t), storageDir, nil, nil)
	again.rcv.retry = fakeRetry
	logs = observeSync(again)
	again.start()
	again.waitLog(msgInitialSync)
	got = syncFields(t, logs)
	assert.EqualValues(t, 3, got["reports"])
	assert.EqualValues(t, 0, got["records"])
	assert.Empty(t, again.records(), "nothing changed, so nothing is emitted again")
}
