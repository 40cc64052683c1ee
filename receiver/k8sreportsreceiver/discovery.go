// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// runningWatcher is a watcher goroutine and how to stop it.
type runningWatcher struct {
	kind   reportKind
	cancel context.CancelFunc
	done   chan struct{}
}

type servedResource struct {
	kind    reportKind
	objKind string
}

// discover polls discovery for the report resources being served, starts a watcher for each one that appears
// (a CRD installed after start) and stops the watcher of each one that disappears (a CRD deleted), resolving
// its reports. One group/version failing to answer leaves its watchers as they are.
func (r *reportsReceiver) discover(ctx context.Context, clients *apiClients) {
	first := true
	for {
		r.discoverOnce(ctx, clients, first)
		first = false
		t := time.NewTimer(r.cfg.DiscoveryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (r *reportsReceiver) discoverOnce(ctx context.Context, clients *apiClients, first bool) {
	served := map[schema.GroupVersionResource]servedResource{}
	answered := map[schema.GroupVersion]bool{}
	var failed error
	for _, gv := range groupVersions(r.kinds) {
		list, err := clients.discovery.ServerResourcesForGroupVersion(gv.String())
		if apierrors.IsNotFound(err) {
			answered[gv] = true
			continue
		}
		if err != nil {
			failed = err
			continue
		}
		answered[gv] = true
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") || !slices.Contains(res.Verbs, "watch") {
				continue
			}
			for _, k := range r.kinds {
				if k.groupVersion == gv && k.wants(res.Name) {
					served[gv.WithResource(res.Name)] = servedResource{kind: k, objKind: res.Kind}
				}
			}
		}
	}
	if failed != nil {
		r.problems.set("discovery", "", reasonOf("discovery", failed), failed)
	} else {
		r.problems.clearSource("discovery")
	}

	for _, k := range r.kinds {
		if !answered[k.groupVersion] {
			continue
		}
		isServed := false
		for _, s := range served {
			isServed = isServed || s.kind.name == k.name
		}
		if !isServed && !r.unserved[k.name] {
			// Not an error: most clusters run only some of the engines whose reports this receiver knows.
			r.set.Logger.Info("Report kind not served; watching for its CRD to be installed",
				zap.String("kind", k.name), zap.String("group_version", k.groupVersion.String()))
		}
		r.unserved[k.name] = !isServed
	}
	started := 0
	for gvr, s := range served {
		if _, running := r.watchers[gvr]; !running {
			r.startWatcher(ctx, clients, gvr, s, first, first && r.store == nil && r.cfg.InitialSync == InitialSyncNone)
			started++
		}
	}
	if first && r.sync.watchersStarted(started) {
		r.tracker.ifIdle(r.sync.emitterIdle)
	}
	for gvr, w := range r.watchers {
		if _, ok := served[gvr]; !ok && answered[gvr.GroupVersion()] {
			r.set.Logger.Info("Report resource no longer served; its reports are resolved", zap.String("resource", gvr.String()))
			w.cancel()
			<-w.done
			delete(r.watchers, gvr)
			r.telemetry.ReceiverK8sReportsResourcesWatched.Add(ctx, -1)
			r.problems.clearSource(gvr.String())
			r.tracker.removeGVR(gvr, w.kind.name)
		}
	}
	if first {
		// Reports of resources that went away while the receiver was down.
		for gvr := range r.tracker.emittedGVRs() {
			if _, ok := served[gvr]; !ok && answered[gvr.GroupVersion()] {
				r.tracker.removeGVR(gvr, "")
			}
		}
	}
}

// startWatcher starts watching gvr; initial says that it belongs to the initial sync, adopt that its first
// list is recorded as emitted without emitting it.
func (r *reportsReceiver) startWatcher(ctx context.Context, clients *apiClients, gvr schema.GroupVersionResource, s servedResource, initial, adopt bool) {
	wctx, cancel := context.WithCancel(ctx)
	rw := &runningWatcher{kind: s.kind, cancel: cancel, done: make(chan struct{})}
	r.watchers[gvr] = rw
	w := &watcher{
		gvr: gvr, objKind: s.objKind, kind: s.kind, client: clients.rest, cfg: r.cfg,
		tracker: r.tracker, problems: r.problems, adoptFirstList: adopt, retry: r.retry, progressed: r.hooks.progressed,
	}
	if initial {
		w.firstListed = func() {
			if r.sync.firstListDone() {
				r.tracker.ifIdle(r.sync.emitterIdle)
			}
		}
	}
	r.set.Logger.Info("Watching report resource", zap.String("resource", gvr.String()), zap.String("kind", s.kind.name))
	r.telemetry.ReceiverK8sReportsResourcesWatched.Add(ctx, 1)
	go func() {
		defer close(rw.done)
		w.run(wctx)
	}()
}

func groupVersions(kinds []reportKind) []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, k := range kinds {
		if !slices.Contains(out, k.groupVersion) {
			out = append(out, k.groupVersion)
		}
	}
	return out
}
