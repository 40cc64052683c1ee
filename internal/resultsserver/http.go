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

	"github.com/otelcol-policy/otelcol-policy/internal/connlimit"
)

// DefaultFailingLimit and MaxFailingLimit bound GET /v1/fleet/failing, so one request cannot make the server
// read a whole fleet's failures into memory.
const (
	DefaultFailingLimit = 1000
	MaxFailingLimit     = 10000
)

// HTTPHandler serves the fleet view as JSON and as web pages, and the server's self-metrics:
//
//	GET /v1/fleet          counts by outcome per cluster and per cluster, source and policy
//	GET /v1/fleet/failing  the failing results (outcome fail or error), at most limit (default 1000)
//	GET /metrics           self-metrics in the Prometheus text format
//	GET /, /policies, /namespaces, /results, /results/{key}, /trend: the web UI (ui.go)
//
// The fleet endpoints take the query parameters of a Filter (filterParams: cluster, namespace, cluster_wide,
// policy, rule, severity, source, kind, vulnerability, min_score, fixable, q); failing also takes limit (1 to
// 10000). An unknown, repeated or invalid parameter is a 400. When tokens are configured,
// requests need one of them as "Authorization: Bearer <token>", like the gRPC API, else they get a 401: the
// fleet view shows every cluster's failures. /metrics too: it is closed like the rest, and Prometheus can send a
// token. The web UI's pages also accept the token kept in a cookie by its login page, and send a browser without
// one there.
func (s *Server) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/fleet", func(w http.ResponseWriter, r *http.Request) {
		f, err := parseFilter(r.URL.Query(), false)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		v, err := s.store.counts(r.Context(), f)
		if err != nil {
			s.dbError(w, r, err)
			return
		}
		writeJSON(w, struct {
			Clusters []ClusterCounts `json:"clusters"`
			Policies []PolicyCounts  `json:"policies"`
		}{v.Clusters, v.Policies})
	})
	mux.HandleFunc("GET /v1/fleet/failing", func(w http.ResponseWriter, r *http.Request) {
		f, err := parseFilter(r.URL.Query(), true)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		failing, truncated, err := s.store.failing(r.Context(), f)
		if err != nil {
			s.dbError(w, r, err)
			return
		}
		writeJSON(w, struct {
			Failing   []FailingResult `json:"failing"`
			Truncated bool            `json:"truncated"`
		}{failing, truncated})
	})
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
		switch {
		case len(s.tokens) == 0, s.authorized(r.Header.Values("Authorization")), page && s.cookieAuthorized(r):
			// The connection showed a client: it keeps its place when the listener is full (listener.go).
			connlimit.Prove(r.Context())
		case page && uiOpen(r.URL.Path):
		default:
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

func parseFilter(q url.Values, withLimit bool) (Filter, error) {
	f := Filter{}
	if withLimit {
		f.Limit = DefaultFailingLimit
	}
	for name, values := range q {
		if len(values) != 1 {
			return Filter{}, fmt.Errorf("parameter %s: given %d times, want once", name, len(values))
		}
		v := values[0]
		if name == "limit" {
			if !withLimit {
				return Filter{}, errors.New("parameter limit: only /v1/fleet/failing takes it")
			}
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

func (s *Server) dbError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	s.logger.Warn("fleet view query failed", zap.String("path", r.URL.Path), zap.Error(err))
	writeError(w, http.StatusServiceUnavailable, errors.New("the results database is unavailable, retry later"))
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
