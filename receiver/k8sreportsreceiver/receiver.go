package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

	tracker       *tracker
	store         *stateStore
	storageClient storage.Client

	// watchers is owned by the discovery goroutine.
	watchers map[schema.GroupVersionResource]*runningWatcher
	cancel   context.CancelFunc
	wg       sync.WaitGroup
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
	return &reportsReceiver{
		cfg: cfg, set: set, next: next, kinds: enabledKinds(cfg.Kinds), telemetry: tb, obsrecv: obsrecv,
		problems: newProblems(set.Logger, tb),
		watchers: map[schema.GroupVersionResource]*runningWatcher{},
	}, nil
}

// Start loads the stored state and starts watching in the background. It fails only on configuration errors
// (a storage extension that does not exist); an API server that cannot be reached, including no kubeconfig on
// a laptop, is a recoverable error status while the receiver keeps retrying.
func (r *reportsReceiver) Start(ctx context.Context, host component.Host) error {
	r.problems.start(host)
	var emitted map[objKey]*emittedReport
	if r.cfg.Storage != nil {
		ext, ok := host.GetExtensions()[*r.cfg.Storage]
		if !ok {
			return fmt.Errorf("storage extension %s is not configured", r.cfg.Storage)
		}
		se, ok := ext.(storage.Extension)
		if !ok {
			return fmt.Errorf("extension %s is not a storage extension", r.cfg.Storage)
		}
		client, err := se.GetClient(ctx, component.KindReceiver, r.set.ID, "")
		if err != nil {
			return fmt.Errorf("storage client: %w", err)
		}
		r.storageClient = client
		r.store = &stateStore{client: client}
		if emitted, err = r.store.load(ctx); err != nil {
			return err
		}
	}
	r.tracker = newTracker(maxPendingReports, emitted)
	r.telemetry.ReceiverK8sReportsReports.Add(ctx, int64(r.tracker.size()))

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

// connect builds the API clients, retrying while the configuration cannot be loaded.
func (r *reportsReceiver) connect(ctx context.Context) *apiClients {
	retry := newBackoff(time.Second, maxRetryDelay)
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
	if r.cancel != nil {
		r.cancel()
		r.tracker.close()
		r.wg.Wait()
	}
	var err error
	if r.storageClient != nil {
		err = r.storageClient.Close(context.Background())
	}
	r.telemetry.Shutdown()
	return errors.Join(err)
}
