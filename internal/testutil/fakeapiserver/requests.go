// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package fakeapiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"

import (
	"net/url"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Request is one request the server answered.
type Request struct {
	// Seq numbers the requests from 1 in the order they were answered; a watch counts when it opened.
	Seq       int
	Method    string
	Path      string
	Query     url.Values
	Verb      string // discovery, list, watch, get, create, update or delete
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
	Status    int
}

// waitTimeout bounds every wait; a test that reaches it has failed.
const waitTimeout = 30 * time.Second

func (s *Server) logLocked(req Request) {
	req.Seq = len(s.requests) + 1
	s.requests = append(s.requests, req)
	s.notifyLocked()
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequest waits for the first request, answered so far or later, for which match is true.
func (s *Server) WaitRequest(t testing.TB, match func(Request) bool) Request {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for seen := 0; ; {
		s.mu.Lock()
		for ; seen < len(s.requests); seen++ {
			if match(s.requests[seen]) {
				r := s.requests[seen]
				s.mu.Unlock()
				return r
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("fakeapiserver: no matching request within %s; requests: %v", waitTimeout, s.Requests())
		}
	}
}

// WaitWatch waits for a watch of gvr opened after request number after, and returns it. Once it returns,
// every change the test makes is delivered to that watch.
func (s *Server) WaitWatch(t testing.TB, gvr schema.GroupVersionResource, after int) Request {
	t.Helper()
	return s.WaitRequest(t, func(r Request) bool {
		return r.Seq > after && r.Verb == "watch" && r.GVR == gvr && r.Status == 200
	})
}

// Watching reports how many watches of gvr are open.
func (s *Server) Watching(gvr schema.GroupVersionResource) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := range s.watches {
		if w.gvr == gvr && !w.ended {
			n++
		}
	}
	return n
}

// LastSeq is the number of the last request answered, to wait for requests after it.
func (s *Server) LastSeq() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}
