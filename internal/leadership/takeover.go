// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package leadership // import "github.com/otelcol-policy/otelcol-policy/internal/leadership"

import (
	"context"
	"time"
)

// The delays between attempts to take over: the previous leader usually releases the storage within
// milliseconds of its last write, but a slow disk or a long last emission may hold it for seconds.
const (
	firstRetryDelay = 100 * time.Millisecond
	maxRetryDelay   = 5 * time.Second
)

// TakeOver runs start, a component's loading of the state it shares with the other replicas, until it succeeds
// or leading ends, waiting 100 ms after the first failure and twice as long after each next one, up to 5 s.
// Call it from the elector's start callback, with the leadership's context.
//
// A new leader retries because the previous one may still hold the shared storage (file_storage's file lock)
// until it wrote what it emitted last: its stop callbacks run only after it lost the lease, so the first attempt
// of a handover routinely fails. report, if not nil, is told the outcome of every attempt (err nil for the one
// that succeeded), numbered from 1, for the component's log and status.
func TakeOver(leading context.Context, start func(context.Context) error, report func(attempt int, err error)) {
	delay := firstRetryDelay
	for attempt := 1; ; attempt++ {
		err := start(leading)
		if report != nil {
			report(attempt, err)
		}
		if err == nil {
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-leading.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, maxRetryDelay)
	}
}
