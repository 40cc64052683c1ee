// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/leadership"
	"github.com/otelcol-policy/otelcol-policy/internal/storageclient"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
)

// maxPendingReports bounds the reports waiting between the watchers and the emitter.
const maxPendingReports = 256

type reportsReceiver struct {
	cfg       *Config
	set       receiver.Settings
	next      consumer.Logs
	kinds     []reportKind
	telemetry *metadata.TelemetryBuilder
	obsrecv   *receiverhelper.ObsReport
	problems  *problems
	refusals  *refusals

	tracker       *tracker
	store         *stateStore
	storageClient storage.Client
	// unsaved are report states committed in memory whose storage write failed; the emitter owns it.
	unsaved map[objKey]*emittedReport

	host component.Host
	// mu serialises starting and stopping to lead.
	mu sync.Mutex
	// watchers is owned by the discovery goroutine while leading.
	watchers map[schema.GroupVersionResource]*runningWatcher
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	// reportsCounted is what this leadership added to the reports gauge.
	reportsCounted int64
	// unserved records the kinds last seen not served, to log each change once.
	unserved map[string]bool
	// sync is this leadership's initial sync.
	sync *initialSync

	retry retryDelays
	hooks hooks
}

func newReceiver(cfg *Config, set receiver.Settings, next consumer.Logs) (*reportsReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	obsrecv, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: "http", ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	p := newProblems(set.Logger, tb)
	return &reportsReceiver{
		cfg: cfg, set: set, next: next, kinds: enabledKinds(cfg.Kinds), telemetry: tb, obsrecv: obsrecv,
		problems: p, refusals: newRefusals(p),
		watchers: map[schema.GroupVersionResource]*runningWatcher{}, retry: retryDelays{min: time.Second, max: time.Minute},
	}, nil
}

// Start begins watching, at once or, with a leader elector, whenever this replica leads. It fails only on
// configuration errors (an extension that does not exist); an API server that cannot be reached, including no
// kubeconfig on a laptop, is a recoverable error status while the receiver keeps retrying.
func (r *reportsReceiver) Start(ctx context.Context, host component.Host) error {
	r.problems.start(host)
	r.host = host
	if r.cfg.Storage != nil {
		if _, err := storageclient.Find(host, *r.cfg.Storage); err != nil {
			return err
		}
	}
	if r.cfg.K8sLeaderElector == nil {
		return r.startLeading(ctx)
	}
	le, err := leadership.Find(host, *r.cfg.K8sLeaderElector)
	if err != nil {
		return err
	}
	le.SetCallBackFuncs(func(leading context.Context) {
		leadership.TakeOver(leading, r.startLeading, func(_ int, err error) {
			if err != nil {
				r.problems.set("storage", "", "storage", err)
			} else {
				r.problems.clearSource("storage")
			}
		})
	}, r.stopLeading)
	return nil
}

// startLeading opens the storage, loads what was emitted, and starts the watchers and the emitter. A new
// leader thereby continues from the state the previous one committed to the shared storage: it neither
// re-sends what was emitted nor skips what changed during the handover.
func (r *reportsReceiver) startLeading(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return nil
	}
	var emitted map[objKey]*emittedReport
	r.store, r.storageClient, r.unsaved = nil, nil, nil
	if r.cfg.Storage != nil {
		client, err := storageclient.Open(ctx, r.host, *r.cfg.Storage, component.KindReceiver, r.set.ID)
		if err != nil {
			return err
		}
		r.storageClient = client
		r.store = &stateStore{client: client}
		if emitted, err = r.store.load(ctx); err != nil {
			_ = client.Close(context.Background())
			return err
		}
	}
	// Reports waiting for the emitter hold at most one report's worth of results more than the one being emitted.
	r.tracker = newTracker(maxPendingReports, r.cfg.MaxReportRecords, emitted)
	sync, tracker := newInitialSync(r.set.Logger), r.tracker
	r.sync = sync
	r.tracker.onIdle = func() {
		sync.emitterIdle(len(tracker.emitted))
		if r.hooks.idle != nil {
			r.hooks.idle()
		}
	}
	for k, e := range emitted {
		r.refusals.update(k, e)
	}
	r.reportsCounted = int64(r.tracker.size())
	r.telemetry.ReceiverK8sReportsReports.Add(ctx, r.reportsCounted)
	r.watchers = map[schema.GroupVersionResource]*runningWatcher{}
	r.unserved = map[string]bool{}

	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.emit(runCtx)
	}()
	go func() {
		defer r.wg.Done()
		clients := r.connect(runCtx)
		if clients == nil {
			return
		}
		r.discover(runCtx, clients)
		for _, w := range r.watchers {
			w.cancel()
			<-w.done
		}
		clients.close()
	}()
	return nil
}

// stopLeading stops watching and emitting and closes the storage, before the next leader may open it. A batch
// the pipeline had not accepted yet is not committed, so the next leader emits it.
func (r *reportsReceiver) stopLeading() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.tracker.close()
	r.wg.Wait()
	r.cancel = nil
	for gvr := range r.watchers {
		r.problems.clearSource(gvr.String())
	}
	r.refusals.reset()
	r.telemetry.ReceiverK8sReportsResourcesWatched.Add(context.Background(), -int64(len(r.watchers)))
	r.telemetry.ReceiverK8sReportsReports.Add(context.Background(), -r.reportsCounted)
	r.reportsCounted = 0
	if r.storageClient != nil {
		if err := r.storageClient.Close(context.Background()); err != nil {
			r.set.Logger.Warn("Closing the receiver's storage", zap.Error(err))
		}
		r.storageClient = nil
	}
}

// connect builds the API clients, retrying while the configuration cannot be loaded.
func (r *reportsReceiver) connect(ctx context.Context) *apiClients {
	retry := newBackoff(r.retry.min, r.retry.max)
	for {
		cfg, err := restConfig(r.cfg)
		var clients *apiClients
		if err == nil {
			clients, err = newAPIClients(cfg)
		}
		if err == nil {
			r.problems.clearSource("connection")
			return clients
		}
		r.problems.set("connection", "", "unavailable", err)
		if !retry.wait(ctx) {
			return nil
		}
	}
}

func (r *reportsReceiver) Shutdown(context.Context) error {
	r.stopLeading()
	r.telemetry.Shutdown()
	return nil
}
