// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/pkg/connlimit"
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
		v, truncated, err := s.store.counts(r.Context(), f, f.Limit)
		if err != nil {
			s.queryFailed(w, r, err)
			return
		}
		writeJSON(w, struct {
			Clusters  []ClusterCounts `json:"clusters"`
			Policies  []PolicyCounts  `json:"policies"`
			Truncated bool            `json:"truncated"`
		}{v.Clusters, v.Policies, truncated})
	}))
	mux.HandleFunc("GET /v1/fleet/failing", s.query(func(w http.ResponseWriter, r *http.Request) {
		f, err := parseFilter(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		failing, truncated, err := s.store.failing(r.Context(), f)
		if err != nil {
			s.queryFailed(w, r, err)
			return
		}
		writeJSON(w, struct {
			Failing   []FailingResult `json:"failing"`
			Truncated bool            `json:"truncated"`
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

// filterParams are the query parameters of a Filter, in the order errors list them.
var filterParams = []string{"cluster", "namespace", "cluster_wide", "policy", "rule", "severity", "source", "kind",
	"vulnerability", "min_score", "fixable", "q"}

// parseFilter parses the JSON API's parameters: a filter and its limit.
func parseFilter(q url.Values) (Filter, error) {
	f := Filter{Limit: DefaultFailingLimit}
	for name, values := range q {
		if len(values) != 1 {
			return Filter{}, fmt.Errorf("parameter %s: given %d times, want once", name, len(values))
		}
		v := values[0]
		if name == "limit" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxFailingLimit {
				return Filter{}, fmt.Errorf("parameter limit %q: want 1 to %d", v, MaxFailingLimit)
			}
			f.Limit = n
			continue
		}
		if err := f.set(name, v); err != nil {
			return Filter{}, err
		}
	}
	return f, f.Validate()
}

// textFields are the filter's string fields by query parameter.
func (f *Filter) textFields() map[string]*string {
	return map[string]*string{"cluster": &f.Cluster, "namespace": &f.Namespace, "policy": &f.Policy,
		"rule": &f.Rule, "severity": &f.Severity, "source": &f.Source, "kind": &f.Kind,
		"vulnerability": &f.Vulnerability, "q": &f.Text}
}

// values is the filter as query parameters, the inverse of parseFilter (without the limit).
func (f Filter) values() url.Values {
	v := url.Values{}
	for name, val := range f.textFields() {
		if *val != "" {
			v.Set(name, *val)
		}
	}
	if f.MinScore != nil {
		v.Set("min_score", strconv.FormatFloat(*f.MinScore, 'f', -1, 64))
	}
	if f.Fixable {
		v.Set("fixable", "true")
	}
	if f.ClusterWide {
		v.Set("cluster_wide", "true")
	}
	return v
}

// set sets the field of query parameter name; an empty value leaves it unset, as an empty form field does.
func (f *Filter) set(name, v string) error {
	field := f.textFields()
	switch {
	case field[name] != nil:
		*field[name] = v
	case name == "min_score":
		if v == "" {
			return nil
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("parameter min_score %q: want a number from 0 to 10", v)
		}
		f.MinScore = &n
	case name == "fixable" || name == "cluster_wide":
		b, err := strconv.ParseBool(cmp.Or(v, "false"))
		if err != nil {
			return fmt.Errorf("parameter %s %q: want true or false", name, v)
		}
		*map[string]*bool{"fixable": &f.Fixable, "cluster_wide": &f.ClusterWide}[name] = b
	default:
		return fmt.Errorf("unknown parameter %s: want %s", name, strings.Join(filterParams, ", "))
	}
	return nil
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
