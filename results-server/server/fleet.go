// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// Fleet answers a fleet view from the database.
func (s *Server) Fleet(ctx context.Context, f store.Filter) (store.FleetView, error) {
	if err := f.Validate(); err != nil {
		return store.FleetView{}, err
	}
	v, _, err := s.store.Fleet(ctx, f, 0)
	if err != nil {
		return store.FleetView{}, err
	}
	v.Failing, v.Truncated, err = s.store.Failing(ctx, f)
	return v, err
}

// Result is one result as its page shows it: its current state with the request's extra_metadata and the
// body, and its latest outcomes; store.ErrNoResult for a key the database does not hold.
func (s *Server) Result(ctx context.Context, key string) (store.ResultDetail, error) {
	return s.store.Result(ctx, key)
}
