// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package outage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/opatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/arrivals"
)

// TestOutageRealOPA puts the real OPA in the client's place: OPA decides at a fixed rate and its decision_logs
// plugin uploads to the collector, which exports to the Kafka-protocol broker. The broker goes down long enough
// for the queue to fill; the receiver answers 503, OPA keeps the decisions in its buffer and uploads them again
// later. Every decision id OPA returned must arrive.
func TestOutageRealOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts OPA, a Kafka-protocol broker and a collector")
	}
	t.Parallel()
	sc := currentScale()
	d := kafkaDestination(t)
	dir := t.TempDir()
	healthPort, inPort, metricsPort := collectortest.FreePort(t), collectortest.FreePort(t), collectortest.FreePort(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	// A request larger than the whole queue never fits: the persistent queue answers "full" to it however empty
	// it is, so the receiver would refuse that upload forever. OPA sends its backlog in uploads of up to
	// upload_size_limit_bytes of gzip (32 KiB by default, some 20 times that decompressed), so the bound must be
	// well above the decompressed upload; here OPA's uploads are capped at 4 KiB of gzip instead, and half the
	// scale's bound fills within the outage.
	queueBytes := sc.QueueBytes / 2
	require.NoError(t, os.WriteFile(cfgPath, []byte(config(d, queueBytes, healthPort, inPort, metricsPort,
		filepath.Join(dir, "storage"))), 0o600))
	c := collectortest.Start(t, dir, cfgPath)
	c.WaitHealthy(fmt.Sprintf("http://127.0.0.1:%d/", healthPort))
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	opa := opatest.Start(t, fmt.Sprintf("http://127.0.0.1:%d", inPort), opatest.Options{UploadSizeLimitBytes: 4096})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	decider := decide(ctx, opa, sc.Rate)
	time.Sleep(sc.Before)
	d.down()
	t.Logf("broker down, %d decisions so far", decider.count())
	time.Sleep(sc.Outage)
	refused, err := selfmetrics.ReadMetric(metricsURL, "otelcol_receiver_refused_log_records", `receiver="decision_logs"`)
	require.NoError(t, err)
	d.up()
	t.Logf("broker up, %d decisions so far, %.0f decision records refused by the receiver", decider.count(), refused)
	time.Sleep(sc.After)
	cancel()
	ids, err := decider.wait()
	require.NoError(t, err)

	arrivals.WaitAll(t, context.Background(), d.arrived, ids, 3*time.Minute)
	perID, _ := arrivals.Settle(t, context.Background(), d.arrived, metricsURL, d.name, 2*time.Minute)
	tally := arrivals.Count(ids, perID)
	t.Logf("OPA decided %d, the receiver refused %.0f decision records during the outage, all %d arrived (%d records, %d duplicates)",
		len(ids), refused, tally.Distinct, tally.StoredLines, tally.Duplicates)
	writeResult(t, fmt.Sprintf("outage-opa-%s", sc.Name), opaResult{
		scale: sc, OutageS: sc.Outage.Seconds(), QueueBytes: queueBytes, UploadLimit: 4096, Decided: len(ids),
		Refused: int(refused), Tally: tally, Date: time.Now().UTC().Format(time.DateOnly),
	})
	assert.Positive(t, refused, "the receiver pushed back on OPA once the queue was full")
	assert.Empty(t, tally.Lost, "OPA decisions that never arrived")
	assert.Empty(t, tally.Foreign, "decisions in Kafka that OPA never made")
}

// opaResult is what the real-OPA run reports ($TESTBED_RESULTS_DIR/outage-opa-<scale>.json).
type opaResult struct {
	scale
	OutageS     float64 `json:"outage_s"`
	QueueBytes  int64   `json:"queue_bytes"` // this run's bound, not the scale's
	UploadLimit int     `json:"opa_upload_size_limit_bytes"`
	Decided     int     `json:"decided"`
	Refused     int     `json:"receiver_refused_records"`
	arrivals.Tally
	Date string `json:"date"`
}

// decider asks OPA for decisions at a fixed rate and keeps the decision ids OPA returned.
type decider struct {
	done chan struct{}
	mu   sync.Mutex
	ids  []string
	err  error
}

func decide(ctx context.Context, opa *opatest.Server, rate int) *decider {
	d := &decider{done: make(chan struct{})}
	const ticks = 20 // per second
	go func() {
		defer close(d.done)
		tick := time.NewTicker(time.Second / ticks)
		defer tick.Stop()
		for seq := 0; ; {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for range max(rate/ticks, 1) {
				user := "alice"
				if seq%3 == 0 {
					user = "mallory"
				}
				id, err := opa.Decide(user, seq)
				seq++
				d.mu.Lock()
				if err != nil {
					d.err = err
					d.mu.Unlock()
					return
				}
				d.ids = append(d.ids, id)
				d.mu.Unlock()
			}
		}
	}()
	return d
}

func (d *decider) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ids)
}

func (d *decider) wait() ([]string, error) {
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ids, d.err
}
