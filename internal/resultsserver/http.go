// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"go.uber.org/zap"
)

// DefaultFailingLimit and MaxFailingLimit bound GET /v1/fleet/failing, so one request cannot make the server
// read a whole fleet's failures into memory.
const (
	DefaultFailingLimit = 1000
	MaxFailingLimit     = 10000
)

// HTTPHandler serves the fleet view as JSON, and the server's self-metrics:
//
//	GET /v1/fleet          counts by outcome per cluster and per cluster, source and policy
//	GET /v1/fleet/failing  the failing results (outcome fail or error), at most limit (default 1000)
//	GET /metrics           self-metrics in the Prometheus text format
//
// The fleet endpoints take the query parameters cluster, namespace, policy, severity and source; failing also
// takes limit (1 to 10000). An unknown, repeated or invalid parameter is a 400. When tokens are configured,
// requests need one of them as "Authorization: Bearer <token>", like the gRPC API, else they get a 401: the
// fleet view shows every cluster's failures. /metrics too: it is closed like the rest, and Prometheus can send a
// token.
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
	if len(s.tokens) == 0 {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(r.Header.Values("Authorization")) {
			mux.ServeHTTP(w, r)
			return
		}
		s.metrics.httpUnauthenticated.Add(1)
		s.logger.Debug("rejected an HTTP request without a valid bearer token", zap.String("remote", r.RemoteAddr))
		w.Header().Set("WWW-Authenticate", `Bearer realm="results-server"`)
		writeError(w, http.StatusUnauthorized, errors.New("missing or invalid bearer token"))
	})
}

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
		switch name {
		case "cluster":
			f.Cluster = v
		case "namespace":
			f.Namespace = v
		case "policy":
			f.Policy = v
		case "severity":
			f.Severity = v
		case "source":
			f.Source = v
		case "limit":
			if !withLimit {
				return Filter{}, errors.New("parameter limit: only /v1/fleet/failing takes it")
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxFailingLimit {
				return Filter{}, fmt.Errorf("parameter limit %q: want 1 to %d", v, MaxFailingLimit)
			}
			f.Limit = n
		default:
			return Filter{}, fmt.Errorf("unknown parameter %s: want cluster, namespace, policy, severity or source", name)
		}
	}
	return f, f.Validate()
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
