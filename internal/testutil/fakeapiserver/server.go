// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package fakeapiserver is an in-process Kubernetes API server for unit tests: the part of the real protocol that
// discovery, list-and-watch clients and leader election use, served over HTTP by httptest. Tests drive it
// (create, change and delete objects, serve or stop serving a resource, expire resource versions, deny a
// resource) and observe it (the requests it answered, the watches it holds), so that they wait on what the
// client did rather than on time. The real control plane (internal/testutil/apiserver) remains the reference; this
// server is for what a test cannot make a real one do on cue.
package fakeapiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Server is a fake API server. Its zero value is not usable; call Start.
type Server struct {
	http *httptest.Server

	mu        sync.Mutex
	rv        uint64 // the last resource version handed out
	compacted uint64 // events at or below it are forgotten: older versions are 410 Gone
	resources map[schema.GroupVersionResource]*resource
	events    []event
	watches   map[*watch]struct{}
	denied    map[schema.GroupVersionResource]map[string]bool // verbs
	requests  []Request
	// expireContinue answers the next continued list with 410 Gone.
	expireContinue bool
	// unavailable are the group versions whose discovery fails.
	unavailable map[schema.GroupVersion]bool
	// changed is closed and replaced whenever a request is logged or a watch opens or ends.
	changed chan struct{}
}

// resource is one served resource and its objects.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	objects    map[objectName]map[string]any
}

type objectName struct{ namespace, name string }

// Start serves a fake API server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		resources:   map[schema.GroupVersionResource]*resource{},
		watches:     map[*watch]struct{}{},
		denied:      map[schema.GroupVersionResource]map[string]bool{},
		unavailable: map[schema.GroupVersion]bool{},
		changed:     make(chan struct{}),
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// URL is the server's address.
func (s *Server) URL() string { return s.http.URL }

// Close ends every watch and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	for w := range s.watches {
		w.end()
	}
	s.mu.Unlock()
	s.http.Close()
}

// Kubeconfig writes a kubeconfig naming the server and returns its path.
func (s *Server) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
`, s.URL())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Serve starts serving a resource (a CRD was installed): discovery lists it, and its objects can be listed,
// watched, read and written. Serving a resource again keeps its objects.
func (s *Server) Serve(gvr schema.GroupVersionResource, kind string, namespaced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.resources[gvr]; ok {
		return
	}
	s.resources[gvr] = &resource{gvr: gvr, kind: kind, namespaced: namespaced, objects: map[objectName]map[string]any{}}
}

// Unserve stops serving a resource (its CRD was deleted): its objects are deleted, as the API server does
// before it removes a CRD, then its watches end and discovery no longer lists it.
func (s *Server) Unserve(gvr schema.GroupVersionResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.resources[gvr]
	if !ok {
		return
	}
	for n := range res.objects {
		s.deleteLocked(res, n)
	}
	for w := range s.watches {
		if w.gvr == gvr {
			w.end()
		}
	}
	delete(s.resources, gvr)
}

// Deny answers the verbs (list, watch, get, create, update, delete) on a resource with 403 Forbidden, as RBAC
// does for a service account without the right; no verbs denies them all.
func (s *Server) Deny(gvr schema.GroupVersionResource, verbs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(verbs) == 0 {
		verbs = []string{"list", "watch", "get", "create", "update", "delete"}
	}
	if s.denied[gvr] == nil {
		s.denied[gvr] = map[string]bool{}
	}
	for _, v := range verbs {
		s.denied[gvr][v] = true
	}
}

// Allow lifts Deny.
func (s *Server) Allow(gvr schema.GroupVersionResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.denied, gvr)
}

// Compact forgets every event so far, as etcd compaction does: a watch from an older resource version gets
// an ERROR event with 410 Gone, a list continued with an older token gets 410 Gone, and open watches end.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++ // every version handed out so far is now older than the compaction
	s.compacted = s.rv
	s.events = nil
	for w := range s.watches {
		w.expire()
	}
}

// ExpireNextContinue answers the next list that carries a continue token with 410 Gone, as when the token
// expires between two pages of a long list.
func (s *Server) ExpireNextContinue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireContinue = true
}

// FailDiscovery answers discovery of a group version with 503 Service Unavailable, as for an aggregated API
// whose server is down, until RestoreDiscovery; its resources are still served.
func (s *Server) FailDiscovery(gv schema.GroupVersion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable[gv] = true
}

// RestoreDiscovery lifts FailDiscovery.
func (s *Server) RestoreDiscovery(gv schema.GroupVersion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.unavailable, gv)
}

// EndWatches ends the open watches of a resource, as the API server does when a watch's timeout passes; the
// clients resume from the last resource version they saw.
func (s *Server) EndWatches(gvr schema.GroupVersionResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		if w.gvr == gvr {
			w.end()
		}
	}
}

// notifyLocked wakes whoever waits for a request or a watch.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
