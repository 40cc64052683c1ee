// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// seenVersion is a resource version of one resource that the watcher must have handed to the tracker; an
// empty version is reached by the first complete list.
type seenVersion struct {
	gvr schema.GroupVersionResource
	rv  string
}

func (v seenVersion) String() string { return v.gvr.Resource + "@" + v.rv }

// progress is what a receiver's hooks and pipeline tell its test: how far each watcher got, and that the
// emitter went idle or delivered records. Each of them wakes a test waiting in wait, which then checks its
// condition again: tests wait on what the receiver did, never on time.
type progress struct {
	mu      sync.Mutex
	rvs     map[schema.GroupVersionResource]uint64
	logs    []string
	changed chan struct{}
}

func newProgress() *progress {
	return &progress{rvs: map[schema.GroupVersionResource]uint64{}, changed: make(chan struct{}, 1)}
}

func (p *progress) notify() {
	select {
	case p.changed <- struct{}{}:
	default: // a wake-up is pending already
	}
}

func (p *progress) hooks() hooks {
	return hooks{
		progressed: func(gvr schema.GroupVersionResource, rv string) {
			// Resource versions are opaque to clients; kube-apiserver's (etcd revisions) and fakeapiserver's are
			// increasing integers, which the tests rely on.
			n, _ := strconv.ParseUint(rv, 10, 64)
			p.mu.Lock()
			if cur, ok := p.rvs[gvr]; !ok || n > cur {
				p.rvs[gvr] = n
			}
			p.mu.Unlock()
			p.notify()
		},
		idle: p.notify,
	}
}

// consumer passes records on to next and wakes the test.
func (p *progress) consumer(next consumer.Logs) consumer.Logs {
	c, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		defer p.notify()
		return next.ConsumeLogs(ctx, ld)
	})
	if err != nil {
		panic(err)
	}
	return c
}

func (p *progress) reached(v seenVersion) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.rvs[v.gvr]
	if !ok {
		return false
	}
	want, _ := strconv.ParseUint(v.rv, 10, 64)
	return cur >= want
}

func (p *progress) seen() map[string]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]uint64{}
	for gvr, rv := range p.rvs {
		out[gvr.Resource] = rv
	}
	return out
}

// wait returns once cond holds, checking it each time the receiver reports something.
func (p *progress) wait(t *testing.T, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-p.changed:
		case <-deadline.C:
			t.Fatalf("not reached within %s: %s", timeout, describe())
		}
	}
}

// logger tees base into a record of the messages logged, which wakes the test.
func (p *progress) logger(base *zap.Logger) *zap.Logger {
	return base.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, &logCore{LevelEnabler: zapcore.InfoLevel, p: p})
	}))
}

// logged says whether msg was logged.
func (p *progress) logged(msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.logs, msg)
}

type logCore struct {
	zapcore.LevelEnabler
	p *progress
}

func (c *logCore) With([]zapcore.Field) zapcore.Core { return c }

func (c *logCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *logCore) Write(e zapcore.Entry, _ []zapcore.Field) error {
	c.p.mu.Lock()
	c.p.logs = append(c.p.logs, e.Message)
	c.p.mu.Unlock()
	c.p.notify()
	return nil
}

func (c *logCore) Sync() error { return nil }

// String makes failure messages readable.
func (p *progress) String() string { return fmt.Sprint(p.seen()) }
