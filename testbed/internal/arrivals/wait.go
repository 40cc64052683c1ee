// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package arrivals

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
)

// Reader reads what reached a backend so far: how often each id arrived, and how many records carried them.
type Reader func(ctx context.Context) (perID map[string]int, records int, err error)

// WaitAll polls read until every accepted id arrived, and fails the test at the timeout with how many are missing.
func WaitAll(t testing.TB, ctx context.Context, read Reader, accepted []string, timeout time.Duration) {
	t.Helper()
	collectortest.Eventually(t, timeout, func() error {
		perID, records, err := read(ctx)
		if err != nil {
			return err
		}
		if missing := Missing(accepted, perID); missing > 0 {
			return fmt.Errorf("%d of %d accepted items have not arrived yet (%d records so far)", missing, len(accepted), records)
		}
		return nil
	})
}

// settlePolls is how many polls in a row (about a second's worth) must see an empty queue and no new record.
const settlePolls = 10

// Settle polls read until the exporter's queue is empty and the number of records has stopped changing, and
// returns what arrived: a persistent queue replays what it was not sure was delivered, so duplicates can still
// come after everything accepted is there, and only a settled count counts them all.
func Settle(t testing.TB, ctx context.Context, read Reader, metricsURL, exporter string, timeout time.Duration) (perID map[string]int, records int) {
	t.Helper()
	stable, last := 0, -1
	collectortest.Eventually(t, timeout, func() error {
		var err error
		if perID, records, err = read(ctx); err != nil {
			return err
		}
		q, err := selfmetrics.ReadMetric(metricsURL, "otelcol_exporter_queue_size", fmt.Sprintf("exporter=%q", exporter))
		if err != nil {
			return err
		}
		if q != 0 || records != last {
			stable, last = 0, records
			return fmt.Errorf("still draining: queue %.0f, %d records", q, records)
		}
		if stable++; stable < settlePolls {
			return fmt.Errorf("waiting for the record count to settle (%d records)", records)
		}
		return nil
	})
	return perID, records
}
