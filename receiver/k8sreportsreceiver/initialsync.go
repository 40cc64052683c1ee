// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// initialSync logs, once per leadership, when the receiver has caught up with the API server: every report
// resource served when it started has been listed, and the emitter has emitted and committed all of it. It is
// what an operator waits for after a start or a handover, and how long it took (the same on a restart where
// nothing changed, which then emits no record).
type initialSync struct {
	logger  *zap.Logger
	start   time.Time
	records atomic.Int64 // accepted by the pipeline since start

	mu sync.Mutex
	// listing counts the watchers of the first discovery whose first list is not complete; it may go below zero
	// before discovered is set, as watchers start listing while discovery still starts others.
	listing    int
	discovered bool
	logged     bool
}

const msgInitialSync = "Initial sync complete: every report resource was listed and its records emitted"

func newInitialSync(logger *zap.Logger) *initialSync {
	return &initialSync{logger: logger, start: time.Now()}
}

// watchersStarted is told how many watchers the first discovery started.
func (s *initialSync) watchersStarted(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listing += n
	s.discovered = true
	return s.listedLocked()
}

// firstListDone is told by each watcher of the first discovery when its first list is complete; true once all
// of them are.
func (s *initialSync) firstListDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listing--
	return s.listedLocked()
}

func (s *initialSync) listedLocked() bool { return s.discovered && s.listing <= 0 }

// emitterIdle is called while the emitter waits with nothing to take (with the tracker locked), reports being
// the reports known downstream; it logs the first time the lists are also complete.
func (s *initialSync) emitterIdle(reports int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logged || !s.listedLocked() {
		return
	}
	s.logged = true
	s.logger.Info(msgInitialSync,
		zap.Int("reports", reports), zap.Int64("records", s.records.Load()),
		zap.Duration("duration", time.Since(s.start)))
}
