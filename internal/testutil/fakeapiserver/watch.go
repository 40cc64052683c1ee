// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package fakeapiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// watchBuffer is how many events a watch holds for a slow client; beyond it the watch ends, as the API
// server ends the watches of clients that do not keep up.
const watchBuffer = 4096

// watch is one open watch stream.
type watch struct {
	gvr       schema.GroupVersionResource
	namespace string
	selector  labels.Selector
	bookmarks bool
	events    chan []byte
	done      chan struct{}
	ended     bool
}

// matches says whether the watch sees this version of an object.
func (w *watch) matches(obj map[string]any) bool {
	if obj == nil {
		return false
	}
	if w.namespace != "" && nameOf(obj).namespace != w.namespace {
		return false
	}
	return w.selector.Matches(labels.Set(labelsOf(obj)))
}

// deliver sends ev as this watch sees it: an object that starts or stops matching the selector is added or
// deleted, as the API server's watch cache does.
func (w *watch) deliver(ev event) {
	if ev.gvr != w.gvr {
		return
	}
	now, before := w.matches(ev.obj), w.matches(ev.old)
	switch {
	case ev.typ == "MODIFIED" && now && !before:
		w.send("ADDED", ev.obj)
	case ev.typ == "MODIFIED" && !now && before:
		w.send("DELETED", ev.obj)
	case now:
		w.send(ev.typ, ev.obj)
	}
}

func (w *watch) send(typ string, obj any) {
	if w.ended {
		return
	}
	b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		panic(err)
	}
	select {
	case w.events <- append(b, '\n'):
	default:
		w.end()
	}
}

// expire tells the client its resource version is gone and ends the watch.
func (w *watch) expire() {
	w.send("ERROR", statusBody(http.StatusGone, "Expired", "too old resource version: the events were compacted"))
	w.end()
}

func (w *watch) end() {
	if !w.ended {
		w.ended = true
		close(w.done)
	}
}

// serveWatch streams the events of a resource after the requested version: first those it missed, then new
// ones, until the client goes, the timeout passes, or the test ends the watch. It is called with s.mu held
// and unlocks it, once the watch is registered, so that no change falls between the replay and the stream.
func (s *Server) serveWatch(rw http.ResponseWriter, r *http.Request, req Request, res *resource) {
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		s.refuse(rw, req, http.StatusBadRequest, "BadRequest", err.Error())
		s.mu.Unlock()
		return
	}
	w := &watch{gvr: res.gvr, namespace: req.Namespace, selector: sel,
		bookmarks: r.URL.Query().Get("allowWatchBookmarks") == "true",
		events:    make(chan []byte, watchBuffer), done: make(chan struct{})}
	from := r.URL.Query().Get("resourceVersion")
	rv, err := strconv.ParseUint(from, 10, 64)
	switch {
	case from == "" || from == "0":
		// Start with the current state, as synthetic additions.
		for _, obj := range res.sortedObjects() {
			w.deliver(event{gvr: res.gvr, typ: "ADDED", obj: obj})
		}
	case err != nil:
		s.refuse(rw, req, http.StatusBadRequest, "BadRequest", "invalid resourceVersion "+from)
		s.mu.Unlock()
		return
	case rv < s.compacted:
		// The API server answers a watch from a compacted version with a 200 and an ERROR event.
		w.expire()
	default:
		for _, ev := range s.events {
			if ev.rv > rv {
				w.deliver(ev)
			}
		}
	}
	if !w.ended {
		s.watches[w] = struct{}{}
	}
	req.Status = http.StatusOK
	s.logLocked(req)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watches, w)
		s.notifyLocked()
		s.mu.Unlock()
	}()

	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Transfer-Encoding", "chunked")
	rw.WriteHeader(http.StatusOK)
	flush(rw)
	var timeout <-chan time.Time
	if secs, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && secs > 0 {
		t := time.NewTimer(time.Duration(secs) * time.Second)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case b := <-w.events:
			if _, err := rw.Write(b); err != nil {
				return
			}
			flush(rw)
		case <-w.done:
			// Deliver what was sent before the end (an ERROR event), then close the stream.
			for {
				select {
				case b := <-w.events:
					_, _ = rw.Write(b)
				default:
					flush(rw)
					return
				}
			}
		case <-timeout:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func flush(rw http.ResponseWriter) {
	if f, ok := rw.(http.Flusher); ok {
		f.Flush()
	}
}
