// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
)

// floodEvents is one more than the decision_logs receiver's default opa::max_events_per_request (10000): the
// demo's collector keeps the default, so the upload shows the limit a production collector has.
const floodEvents = 10001

// pollUntil calls done every 500 ms until it says yes, ctx ends or timeout passes; what says why it waited.
func pollUntil(ctx context.Context, what string, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			if last != nil {
				return fmt.Errorf("%s: not within %s: %w", what, timeout, last)
			}
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitDecisionsInPrometheus waits until Prometheus holds n decisions in policy_decisions_total: an emission of
// policy_metrics with all of them has been written.
func waitDecisionsInPrometheus(ctx context.Context, p ports, n int, timeout time.Duration) error {
	prom := promtest.New(prometheusURL(p))
	return pollUntil(ctx, fmt.Sprintf("%d decisions in policy_decisions_total", n), timeout, func() (bool, error) {
		got, err := prom.Query(`sum(policy_decisions_total)`)
		return err == nil && len(got) == 1 && int(got[0].Value) == n, err
	})
}

// floodOPA uploads, as a misbehaving client would, one gzip chunk of more decision events than the receiver takes
// in one upload, and returns its answer: the receiver refuses it whole (413) and counts it.
func floodOPA(ctx context.Context, p ports) (string, error) {
	var events bytes.Buffer
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	events.WriteByte('[')
	for i := range floodEvents {
		if i > 0 {
			events.WriteByte(',')
		}
		fmt.Fprintf(&events, `{"decision_id":"flood-%d","path":"demo/admission/decision","result":{"allowed":true},"timestamp":%q}`, i, ts)
	}
	events.WriteByte(']')
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(events.Bytes()); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	size := buf.Len()
	url := "http://127.0.0.1:" + strconv.Itoa(p.DecisionLogs) + "/logs"
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, &buf)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	answer := fmt.Sprintf("%d events (%d KiB of gzip) to %s: %s: %s", floodEvents, size>>10, url, resp.Status, strings.TrimSpace(string(msg)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		return answer, fmt.Errorf("want 413 for an upload of %d events, got %s", floodEvents, answer)
	}
	return answer, nil
}

// collectorCounter reads the sum of a counter from the collector's own metrics endpoint (what Prometheus scrapes),
// 0 when it has no series yet.
func collectorCounter(p ports, name string) (float64, error) {
	resp, err := httpClient.Get("http://127.0.0.1:" + strconv.Itoa(p.CollectorMetrics) + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		total += v
	}
	return total, sc.Err()
}

// prometheusOutage stops the demo's Prometheus until the collector's remote write of an emission has failed
// (its retries of at most 4 s, testbed/cmd/demo/collector.yaml, are over), then starts it again on the same storage and
// waits until it answers. policy_metrics sends every series again every 5 s, so the next emission after the
// restart brings Prometheus back to the same values: nothing is lost, and the failure shows in
// otelcol_exporter_send_failed_metric_points.
func prometheusOutage(ctx context.Context, e env, p ports, b binaries) error {
	const failed = "otelcol_exporter_send_failed_metric_points"
	before, err := collectorCounter(p, failed)
	if err != nil {
		return err
	}
	at, err := stopProc(e, "prometheus")
	if err != nil {
		return err
	}
	if err := pollUntil(ctx, "a failed remote write ("+failed+")", 30*time.Second, func() (bool, error) {
		n, err := collectorCounter(p, failed)
		return n > before, err
	}); err != nil {
		return err
	}
	if err := startPrometheus(e, p, b); err != nil {
		return err
	}
	if err := movePid(e, "prometheus", at); err != nil {
		return err
	}
	prom := promtest.New(prometheusURL(p))
	if err := waitReady(ctx, e, "prometheus", 60*time.Second, prom.Ready); err != nil {
		return err
	}
	// A Prometheus that stops marks what it scraped stale: the collector's own metrics answer again only once the
	// restarted one has scraped them, failures included.
	return pollUntil(ctx, "the collector's metrics scraped again", 60*time.Second, func() (bool, error) {
		got, err := prom.Query(`sum(` + failed + `)`)
		return err == nil && len(got) == 1 && got[0].Value > 0, err
	})
}

// stopProc stops one recorded process (SIGTERM to its group, SIGKILL after 10 s), removes it from
// ./data/demo/pids and returns where it was there.
func stopProc(e env, name string) (int, error) {
	procs, err := readPids(e)
	if err != nil {
		return 0, err
	}
	at := len(procs)
	var keep []proc
	for i, p := range procs {
		if p.name != name {
			keep = append(keep, p)
			continue
		}
		at = i
		if groupAlive(e, p) {
			signal := func(sig syscall.Signal) error { return syscall.Kill(-p.pid, sig) }
			gone := func(d time.Duration) bool { return len(waitGone(e, []proc{p}, d)) == 0 }
			testproc.Terminate(signal, gone, syscall.SIGTERM, 10*time.Second)
		}
	}
	return at, writePids(e, keep)
}

// movePid puts the process name, started again (its line last in ./data/demo/pids), back at its place in the
// start order: `demo down` stops in reverse start order, the collector before its destinations.
func movePid(e env, name string, at int) error {
	procs, err := readPids(e)
	if err != nil || len(procs) == 0 || procs[len(procs)-1].name != name || at >= len(procs)-1 {
		return err
	}
	last := procs[len(procs)-1]
	out := append(append(append([]proc{}, procs[:at]...), last), procs[at:len(procs)-1]...)
	return writePids(e, out)
}

func writePids(e env, procs []proc) error {
	var out bytes.Buffer
	for _, p := range procs {
		fmt.Fprintf(&out, "%s %d\n", p.name, p.pid)
	}
	return os.WriteFile(pidsFile(e), out.Bytes(), 0o644)
}
