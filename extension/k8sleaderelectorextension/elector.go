// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sleaderelectorextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension"

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/otelcol-policy/otelcol-policy/internal/leadership"
)

// LeaderElection is the extension as components see it: a leadership.Elector, whose doc says when the
// callbacks run. Components find it with leadership.Find.
type LeaderElection interface {
	extension.Extension
	leadership.Elector
}

type callbacks struct {
	start func(context.Context)
	stop  func()
}

type elector struct {
	cfg      *Config
	logger   *zap.Logger
	identity string

	mu        sync.Mutex
	callbacks []callbacks
	leading   context.Context // non-nil while leading
	// started is closed once every start callback queued so far returned.
	started chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

var _ LeaderElection = (*elector)(nil)

func newElector(cfg *Config, set extension.Settings) *elector {
	host, _ := os.Hostname()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	return &elector{cfg: cfg, logger: set.Logger, identity: host + "_" + hex.EncodeToString(suffix[:])}
}

func (e *elector) SetCallBackFuncs(onStart func(context.Context), onStop func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.callbacks = append(e.callbacks, callbacks{start: onStart, stop: onStop})
	if e.leading != nil {
		e.queueStarts(e.leading, []callbacks{{start: onStart}})
	}
}

// queueStarts runs the start callbacks cbs after those queued before, in the background, and returns when they
// will have returned; the caller holds mu.
func (e *elector) queueStarts(ctx context.Context, cbs []callbacks) <-chan struct{} {
	prev, done := e.started, make(chan struct{})
	e.started = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		for _, cb := range cbs {
			cb.start(ctx)
		}
	}()
	return done
}

// Start begins competing for the lease in the background; an API server that cannot be reached is a
// recoverable error status, retried, not a failed start.
func (e *elector) Start(_ context.Context, host component.Host) error {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		e.run(ctx, host)
	}()
	return nil
}

func (e *elector) run(ctx context.Context, host component.Host) {
	for ctx.Err() == nil {
		le, err := e.newLeaderElector()
		if err != nil {
			componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(err))
			e.logger.Warn("Cannot take part in the leader election; retrying", zap.Error(err))
			sleep(ctx, e.cfg.RetryPeriod)
			continue
		}
		componentstatus.ReportStatus(host, componentstatus.NewEvent(componentstatus.StatusOK))
		// Run returns when this replica loses the lease or ctx ends; then it competes again.
		le.Run(ctx)
	}
}

func (e *elector) newLeaderElector() (*leaderelection.LeaderElector, error) {
	rc, err := e.cfg.RestConfig("otelcol-policy/k8s_leader_elector")
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, e.cfg.LeaseNamespace, e.cfg.LeaseName,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: e.identity})
	if err != nil {
		return nil, err
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: e.cfg.LeaseDuration,
		RenewDeadline: e.cfg.RenewDeadline,
		RetryPeriod:   e.cfg.RetryPeriod,
		// A replica that shuts down gives the lease up at once, so a rolling update hands over without waiting
		// for the lease to expire.
		ReleaseOnCancel: true,
		Name:            e.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.startedLeading,
			OnStoppedLeading: e.stoppedLeading,
		},
	})
}

func (e *elector) startedLeading(ctx context.Context) {
	e.logger.Info("Started leading", zap.String("lease", e.cfg.LeaseNamespace+"/"+e.cfg.LeaseName), zap.String("identity", e.identity))
	e.mu.Lock()
	// client-go runs this in a goroutine of its own, which may come after the leadership already ended (it
	// cancels ctx before it calls stoppedLeading): starting then would never be followed by a stop.
	if ctx.Err() != nil {
		e.mu.Unlock()
		return
	}
	e.leading = ctx
	done := e.queueStarts(ctx, append([]callbacks(nil), e.callbacks...))
	e.mu.Unlock()
	<-done
}

// stoppedLeading runs the stop callbacks before returning, so that the next Run, and so a new leader, can only
// begin after this replica stopped its work. A start callback still running is waited for: it returns once the
// leadership's context ended, which client-go cancels before it calls here.
func (e *elector) stoppedLeading() {
	e.mu.Lock()
	wasLeading := e.leading != nil
	e.leading = nil
	started := e.started
	cbs := append([]callbacks(nil), e.callbacks...)
	e.mu.Unlock()
	if !wasLeading {
		return
	}
	e.logger.Info("Stopped leading", zap.String("lease", e.cfg.LeaseNamespace+"/"+e.cfg.LeaseName), zap.String("identity", e.identity))
	<-started
	for _, cb := range slices.Backward(cbs) {
		cb.stop()
	}
}

func (e *elector) Shutdown(context.Context) error {
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
