// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// DefaultFailingLimit and MaxFailingLimit bound GET /v1/fleet/failing, and each list of GET /v1/fleet, so one
// request cannot make the server read a whole fleet's failures, or every cluster and policy, into memory.
const (
	DefaultFailingLimit = 1000
	MaxFailingLimit     = 10000
)

// HTTPHandler serves the fleet view as JSON and as web pages, and the server's self-metrics:
//
//	GET /v1/fleet          counts by outcome per cluster and per cluster, source and policy, at most limit of
//	                       each (default 1000)
//	GET /v1/fleet/failing  the failing results (outcome fail or error), at most limit (default 1000)
//	GET /metrics           self-metrics in the Prometheus text format
//	GET /, /policies, /namespaces, /results, /results/{key}, /trend: the web UI (ui.go)
//
// The fleet endpoints take the query parameters of a Filter (filterParams: cluster, namespace, cluster_wide,
// policy, rule, severity, source, kind, vulnerability, min_score, fixable, q) and limit (1 to 10000). An
// unknown, repeated or invalid parameter is a 400. When tokens are configured,
// requests need one of them as "Authorization: Bearer <token>", like the gRPC API, else they get a 401: the
// fleet view shows every cluster's failures. /metrics too: it is closed like the rest, and Prometheus can send a
// token. The web UI's pages also accept the token kept in a cookie by its login page, and send a browser without
// one there.
func (s *Server) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/fleet", s.query(func(w http.ResponseWriter, r *http.Request) {
		f, err := parseFilter(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		v, truncated, err := s.store.Fleet(r.Context(), f, f.Limit)
		if err != nil {
			s.queryFailed(w, r, err)
			return
		}
		writeJSON(w, struct {
			Clusters  []store.ClusterCounts `json:"clusters"`
			Policies  []store.PolicyCounts  `json:"policies"`
			Truncated bool                  `json:"truncated"`
		}{v.Clusters, v.Policies, truncated})
	}))
	mux.HandleFunc("GET /v1/fleet/failing", s.query(func(w http.ResponseWriter, r *http.Request) {
		f, err := parseFilter(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		failing, truncated, err := s.store.Failing(r.Context(), f)
		if err != nil {
			s.queryFailed(w, r, err)
			return
		}
		writeJSON(w, struct {
			Failing   []store.FailingResult `json:"failing"`
			Truncated bool                  `json:"truncated"`
		}{failing, truncated})
	}))
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = s.metrics.write(w)
	})
	s.registerUI(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := uiPage(r.URL.Path)
		if page {
			uiHeaders(w.Header())
		}
		if len(s.tokens) == 0 {
			// Every request is authenticated: the connection showed a client, it keeps its place when the
			// listener is full (listener.go).
			connlimit.Prove(r.Context())
			mux.ServeHTTP(w, r)
			return
		}
		if page && uiOpen(r.URL.Path) {
			mux.ServeHTTP(w, r)
			return
		}
		// A source past its failed authentications is refused before its credentials are checked.
		source := sourceOf(r)
		if wait := s.authFailures.wait(source); wait > 0 {
			s.tooManyFailures(w, r, wait)
			return
		}
		header := r.Header.Values("Authorization")
		_, cookieErr := r.Cookie(tokenCookie)
		switch {
		case s.authorized(header), page && s.cookieAuthorized(r):
			// The connection showed a client: it keeps its place when the listener is full (listener.go).
			connlimit.Prove(r.Context())
		default:
			if len(header) > 0 || page && cookieErr == nil {
				// Credentials, and wrong: a guess. A request without any is a browser to send to sign in.
				s.authFailures.failed(source)
			}
			s.metrics.httpUnauthenticated.Add(1)
			s.logger.Debug("rejected an HTTP request without a valid bearer token", zap.String("remote", r.RemoteAddr))
			if page && r.Method == http.MethodGet {
				// A browser: to the login page, and back here after it.
				http.Redirect(w, r, link("/login", url.Values{"next": {r.URL.RequestURI()}}), http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="results-server"`)
			writeError(w, http.StatusUnauthorized, errors.New("missing or invalid bearer token"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// parseFilter parses the JSON API's parameters: a filter and its limit.
func parseFilter(q url.Values) (store.Filter, error) {
	f := store.Filter{Limit: DefaultFailingLimit}
	for name, values := range q {
		if len(values) != 1 {
			return store.Filter{}, fmt.Errorf("parameter %s: given %d times, want once", name, len(values))
		}
		v := values[0]
		if name == "limit" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxFailingLimit {
				return store.Filter{}, fmt.Errorf("parameter limit %q: want 1 to %d", v, MaxFailingLimit)
			}
			f.Limit = n
			continue
		}
		if err := f.Set(name, v); err != nil {
			return store.Filter{}, err
		}
	}
	return f, f.Validate()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
