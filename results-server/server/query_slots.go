// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"
)

// querySlots bound the fleet queries in flight, server-wide (Limits.MaxConcurrentQueries): each holds a read
// connection of the database, its page cache and sorter, and the rows and page it builds. A query holds its
// slot until its response is written, so that what it built is freed before another query builds more.
type querySlots struct{ sem *semaphore.Weighted }

func newQuerySlots(l Limits) *querySlots {
	return &querySlots{sem: semaphore.NewWeighted(int64(l.MaxConcurrentQueries))}
}

// retryAfter is RetryHint in whole seconds, for Retry-After.
var retryAfter = strconv.Itoa(max(1, int(RetryHint.Seconds())))

// query runs h in a query slot, its context bounded by Limits.QueryTimeout. When no slot frees within
// Limits.QueryQueueWait, it answers 503 with Retry-After instead (a page for the web UI, JSON for the API).
func (s *Server) query(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait, cancel := context.WithTimeout(r.Context(), s.limits.QueryQueueWait)
		err := s.queries.sem.Acquire(wait, 1)
		cancel()
		if err != nil {
			if r.Context().Err() != nil {
				return // the client went away
			}
			s.metrics.httpBusy.Add(1)
			w.Header().Set("Retry-After", retryAfter)
			s.answerError(w, r, http.StatusServiceUnavailable,
				"the server is answering as many fleet queries as it allows at once: retry in a moment")
			return
		}
		defer s.queries.sem.Release(1)
		ctx, cancel := context.WithTimeout(r.Context(), s.limits.QueryTimeout)
		defer cancel()
		h(w, r.WithContext(ctx))
	}
}

// answerError answers an error as the path's kind of response: a page for the web UI, JSON for the API.
func (s *Server) answerError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if uiPage(r.URL.Path) {
		s.renderError(w, r, code, msg)
		return
	}
	writeError(w, code, errors.New(msg))
}

// queryFailed answers a failed query: nothing when the client went away; 503 when the query ran out of time
// (its filter selects too much for Limits.QueryTimeout) or the database failed, logged without being shown (a
// database's messages may name hosts and users).
func (s *Server) queryFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(r.Context().Err(), context.Canceled):
		return
	case errors.Is(r.Context().Err(), context.DeadlineExceeded):
		s.logger.Info("fleet view query ran out of time", zap.String("path", r.URL.Path), zap.Duration("timeout", s.limits.QueryTimeout))
		s.answerError(w, r, http.StatusServiceUnavailable, "the query took longer than the server allows: narrow the filter")
		return
	}
	s.logger.Warn("fleet view query failed", zap.String("path", r.URL.Path), zap.Error(err))
	s.answerError(w, r, http.StatusServiceUnavailable, "the results database is unavailable, retry later")
}
