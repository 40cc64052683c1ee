// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// watcher lists and watches one report resource as raw JSON, like a client-go reflector, but hands each object
// to its parser as soon as its page arrives and keeps nothing of it: a reflector would first hold the whole
// list decoded as unstructured maps, several times the size of the objects, which is what makes report
// exporters run out of memory on big clusters.
type watcher struct {
	gvr      schema.GroupVersionResource
	objKind  string // Kind of the resource, from discovery, for objects whose JSON lacks it
	kind     reportKind
	client   rest.Interface
	cfg      *Config
	tracker  *tracker
	problems *problems
	// adoptFirstList records the first list as already emitted (initial_sync: none).
	adoptFirstList bool
	retry          retryDelays
	// firstListed, when set, is called once, when the first list is complete.
	firstListed func()
	// progressed, when set, is told each resource version up to which everything was handed to the tracker.
	progressed func(gvr schema.GroupVersionResource, rv string)
}

var errGone = errors.New("resource version too old")

// retryDelays bound the backoff between attempts to list, watch or connect: a second to a minute, shorter in
// tests.
type retryDelays struct{ min, max time.Duration }

func (w *watcher) path() string {
	return "/apis/" + w.gvr.Group + "/" + w.gvr.Version + "/" + w.gvr.Resource
}

// run lists and watches until ctx ends, relisting when the watch cannot resume and backing off on errors.
func (w *watcher) run(ctx context.Context) {
	retry := newBackoff(w.retry.min, w.retry.max)
	for ctx.Err() == nil {
		rv, err := w.list(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.problems.fail(w, "list", err)
				retry.wait(ctx)
			}
			continue
		}
		w.problems.clear(w)
		w.adoptFirstList = false
		w.progress(rv)
		if w.firstListed != nil {
			w.firstListed()
			w.firstListed = nil
		}
		retry.reset()
		for ctx.Err() == nil {
			rv, err = w.watch(ctx, rv)
			if errors.Is(err, errGone) || ctx.Err() != nil {
				break
			}
			if err != nil {
				w.problems.fail(w, "watch", err)
				if !retry.wait(ctx) {
					return
				}
				continue
			}
			w.problems.clear(w)
			retry.reset()
		}
	}
}

// list reads every object and reports the complete set to the tracker, which then knows which reports were
// deleted while nobody watched. The pages are read by readList, a page ahead of the parsing.
func (w *watcher) list(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan listChunk, listChunks)
	go w.readList(ctx, chunks)
	seen := map[objKey]struct{}{}
	for {
		var c listChunk
		select {
		case c = <-chunks:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		switch {
		case c.err != nil:
			return "", c.err
		case c.restart:
			seen = map[objKey]struct{}{}
		case c.done:
			w.tracker.listed(w.gvr, w.kind.name, seen)
			return c.rv, nil
		}
		for _, raw := range c.items {
			if err := w.handle(ctx, raw, seen); err != nil {
				return "", err
			}
		}
	}
}

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watch follows changes from rv until the server ends the watch, and returns the last resource version seen.
func (w *watcher) watch(ctx context.Context, rv string) (string, error) {
	// Spread the server-side timeouts so that watches of many resources do not all restart together.
	timeout := 240 + rand.IntN(120) //nolint:gosec // G404: spreads watch timeouts, no secret
	req := w.client.Get().AbsPath(w.path()).
		Param("watch", "true").
		Param("resourceVersion", rv).
		Param("allowWatchBookmarks", "true").
		Param("timeoutSeconds", strconv.Itoa(timeout))
	if w.cfg.LabelSelector != "" {
		req = req.Param("labelSelector", w.cfg.LabelSelector)
	}
	stream, err := req.Stream(ctx)
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return rv, errGone
		}
		return rv, err
	}
	defer stream.Close()
	in := newObjectReader(stream)
	dec := json.NewDecoder(in)
	for {
		in.startObject(dec.InputOffset())
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return rv, nil
			}
			return rv, fmt.Errorf("reading the watch of %s: %w", w.gvr.Resource, err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			if err := w.handle(ctx, ev.Object, nil); err != nil {
				return rv, err
			}
		case "DELETED":
			obj, err := parse.DecodeObject(w.gvr, ev.Object)
			if err != nil {
				return rv, err
			}
			w.tracker.remove(objKey{w.gvr, obj.Metadata.Namespace, obj.Metadata.Name}, w.kind.name)
		case "BOOKMARK":
		case "ERROR":
			var st metav1.Status
			if err := json.Unmarshal(ev.Object, &st); err == nil && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired) {
				return rv, errGone
			}
			return rv, fmt.Errorf("watch of %s: %s", w.gvr.Resource, string(ev.Object))
		default:
			return rv, fmt.Errorf("watch of %s: unknown event type %q", w.gvr.Resource, ev.Type)
		}
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(ev.Object, &meta); err == nil && meta.Metadata.ResourceVersion != "" {
			rv = meta.Metadata.ResourceVersion
		}
		w.progress(rv)
	}
}

func (w *watcher) progress(rv string) {
	if w.progressed != nil {
		w.progressed(w.gvr, rv)
	}
}

// handle parses one object and hands its results to the tracker. A malformed object is logged, counted and
// skipped, and its previously emitted results are left as they are: a report that cannot be read is not a
// report whose findings were fixed. So is a report that fans out to more than the budget; its version is
// remembered with the emitted state, so that it is skipped without being read again, here or after a restart.
func (w *watcher) handle(ctx context.Context, raw json.RawMessage, seen map[objKey]struct{}) error {
	obj, err := parse.DecodeObject(w.gvr, raw)
	if err != nil {
		w.problems.malformed(w, "(undecodable object)", err)
		return nil
	}
	if obj.Kind == "" {
		obj.Kind = w.objKind
	}
	k := objKey{w.gvr, obj.Metadata.Namespace, obj.Metadata.Name}
	if !w.cfg.namespaceAllowed(obj.Metadata.Namespace) {
		return nil
	}
	if seen != nil {
		seen[k] = struct{}{}
	}
	budget := w.cfg.budget()
	if size, refused := w.tracker.refused(k, obj.Metadata.ResourceVersion); refused && !budget.Fits(size) {
		w.problems.tooLarge(w, objRef(obj), &parse.TooLargeError{Size: size, Budget: budget})
		return nil
	}
	u := &update{kind: w.kind.name, uid: obj.Metadata.UID, rv: obj.Metadata.ResourceVersion}
	results, err := w.kind.parse(obj, budget)
	var tooLarge *parse.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		w.problems.tooLarge(w, objRef(obj), err)
		u.refused = &tooLarge.Size
		return w.tracker.put(ctx, k, u)
	case err != nil:
		w.problems.malformed(w, objRef(obj), err)
		return nil
	}
	for i := range results {
		results[i].Cluster = w.cfg.ClusterName
	}
	u.results, u.partial = results, obj.Partial
	u.adopt = w.adoptFirstList && seen != nil
	return w.tracker.put(ctx, k, u)
}

// backoff is an exponential backoff with jitter for retrying API calls.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(minDelay, maxDelay time.Duration) *backoff {
	return &backoff{min: minDelay, max: maxDelay, next: minDelay}
}

func (b *backoff) reset() { b.next = b.min }

// wait sleeps for the next delay; false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next/2 + rand.N(b.next/2+1) //nolint:gosec // G404: jitter, no secret
	b.next = min(2*b.next, b.max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
