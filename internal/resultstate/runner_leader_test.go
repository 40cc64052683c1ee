// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	xstorage "go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/leadertest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

var electorID = component.MustNewID("k8s_leader_elector")

// counter is an Extra: a number the component counts beside the tally.
type counter struct{ n int }

func (c *counter) Name() string { return "counter" }
func (c *counter) Reset()       { c.n = 0 }
func (c *counter) Load(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return errors.Join(ErrRegrouped, err)
	}
	c.n = n
	return nil
}
func (c *counter) Encode() ([]byte, error) { return []byte(strconv.Itoa(c.n)), nil }

// replica is a Runner with the test's elector, its own file_storage extension on the shared directory (each
// replica is a process of its own), and a counter beside the tally.
type replica struct {
	*runnerHarness
	el    *leadertest.Elector
	extra *counter
	host  *statustest.Host
}

func startReplica(t *testing.T, dir string) *replica {
	t.Helper()
	id := filestoragetest.ID
	rp := &replica{el: leadertest.New(), extra: &counter{}}
	storage := filestoragetest.Start(t, dir)
	t.Cleanup(func() { require.NoError(t, storage.Shutdown(context.Background())) })
	rp.host = statustest.NewHost(map[component.ID]component.Component{id: storage, electorID: rp.el})
	rp.runnerHarness = newRunnerHarnessWith(t, names, 100, &id, rp.host, func(s *Settings) {
		s.K8sLeaderElector, s.Extra = &electorID, rp.extra
	})
	t.Cleanup(func() { require.NoError(t, rp.r.Shutdown(context.Background())) })
	return rp
}

// countExtra counts n into the replica's counter, as a component does under the state's lock.
func (rp *replica) countExtra(n int) {
	rp.r.mu.Lock()
	defer rp.r.mu.Unlock()
	rp.extra.n += n
}

func TestRunnerHandsTheStateOverThroughStorage(t *testing.T) {
	dir := t.TempDir()
	a, b := startReplica(t, dir), startReplica(t, dir)

	// Neither leads yet: records are refused, for the receiver to send them again to the leader.
	require.ErrorIs(t, a.count(res("p", "x", policyresult.OutcomeFail)), ErrNotLeading)
	require.NoError(t, a.r.Flush(context.Background()))
	assert.Empty(t, a.emitted, "a follower emits nothing")
	assert.Equal(t, map[string]int64{"not_leading": 1}, a.sum("errors"))

	a.el.Lead()
	require.NoError(t, a.count(res("p", "x", policyresult.OutcomeFail), res("p", "y", policyresult.OutcomePass)))
	a.countExtra(3)
	require.NoError(t, a.r.Flush(context.Background()))
	assert.Equal(t, map[string]policyresult.Counts{"p": {Pass: 1, Fail: 1, Total: 2}}, <-a.emitted)
	require.NoError(t, a.count(res("p", "x", policyresult.OutcomePass), res("q", "z", policyresult.OutcomeWarn)))
	a.countExtra(2)

	// b is elected while a still holds the storage (the lease is released before the stop callbacks run): b
	// waits for a's file lock, which a gives up after emitting what was due and writing its state.
	bLeads := make(chan struct{})
	go func() {
		b.el.Lead()
		close(bLeads)
	}()
	a.el.StopLeading()
	assert.Equal(t, map[string]policyresult.Counts{"p": {Pass: 2, Total: 2}, "q": {Warn: 1, Total: 1}}, <-a.emitted,
		"the last emission of a's leadership")
	<-bLeads
	assert.Equal(t, map[string]int64{"": 0}, a.sum("keys"), "the former leader holds no state")
	assert.Equal(t, 0, a.extra.n)
	require.ErrorIs(t, a.count(res("p", "x", policyresult.OutcomeFail)), ErrNotLeading)

	assert.Equal(t, map[string]int64{"": 3}, b.sum("keys"))
	assert.Equal(t, 5, b.extra.n, "the counter continues from a's")
	require.NoError(t, b.r.Flush(context.Background()))
	assert.Empty(t, <-b.emitted, "what a emitted is not emitted again")
	require.NoError(t, b.count(res("q", "z", policyresult.OutcomeFail)))
	require.NoError(t, b.r.Flush(context.Background()))
	assert.Equal(t, map[string]policyresult.Counts{"q": {Fail: 1, Total: 1}}, <-b.emitted)
}

// The counter is written with the emissions, not with every batch: a crash loses what it counted since the
// last emission, never what was emitted.
func TestRunnerWritesTheExtraWithEmissions(t *testing.T) {
	dir := t.TempDir()
	a := startReplica(t, dir)
	a.el.Lead()
	a.countExtra(4)
	require.NoError(t, a.count(res("p", "x", policyresult.OutcomeFail)))
	require.NoError(t, a.r.Flush(context.Background()))
	<-a.emitted
	a.countExtra(1)
	require.NoError(t, a.count(res("p", "y", policyresult.OutcomeFail)))
	require.NoError(t, a.r.Halt(context.Background()))

	b := startReplica(t, dir)
	b.el.Lead()
	assert.Equal(t, 4, b.extra.n)
	assert.Equal(t, map[string]int64{"": 2}, b.sum("keys"), "results are written with their batch")
}

func TestRunnerDiscardsAnExtraOfAnotherConfiguration(t *testing.T) {
	dir := t.TempDir()
	a := startReplica(t, dir)
	a.el.Lead()
	require.NoError(t, a.count(res("p", "x", policyresult.OutcomeFail)))
	a.countExtra(4)
	a.el.StopLeading()
	// What another configuration stored under the counter's name.
	storage := filestoragetest.Start(t, dir)
	client, err := storage.(xstorage.Extension).GetClient(context.Background(), component.KindProcessor, testID, "")
	require.NoError(t, err)
	require.NoError(t, client.Set(context.Background(), "policy_test/v1/counter", []byte("four")))
	require.NoError(t, client.Close(context.Background()))
	require.NoError(t, storage.Shutdown(context.Background()))

	a.el.Lead()
	assert.Equal(t, 0, a.extra.n, "the counter starts from scratch")
	assert.Equal(t, 1, a.logs.FilterMessageSnippet("The stored counter entry belongs to another configuration").Len())
	assert.Equal(t, map[string]int64{"": 1}, a.sum("keys"), "the tally is loaded")
}

func TestRunnerShutdownEndsAWaitForTheStorage(t *testing.T) {
	dir := t.TempDir()
	a, b := startReplica(t, dir), startReplica(t, dir)
	a.el.Lead()
	bLeads := make(chan struct{})
	go func() {
		b.el.Lead()
		close(bLeads)
	}()
	// b waits for a's lock, reporting it once a retry failed too.
	for ev := b.host.Next(t); ev.Status() != componentstatus.StatusRecoverableError; ev = b.host.Next(t) {
	}
	require.NoError(t, b.r.Shutdown(context.Background()))
	<-bLeads
	require.ErrorIs(t, b.count(res("p", "x", policyresult.OutcomeFail)), ErrNotLeading, "b never led")
}
