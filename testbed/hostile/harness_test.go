// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package hostile attacks the distribution as an attacker on loopback would: one small request, connection, line
// or report crafted to make the collector (or results-server) build far more than it received, or to hold its
// resources. Each attack runs against the binary on a shipped config and asserts that the collector stays up,
// that its peak resident memory stays under the bound stated for that config, that legitimate traffic sent
// during the attack is delivered completely, and that the attack is refused or counted with a reason.
package hostile

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

const mib = 1 << 20

// defaultBoundMiB is what the default config (`make run`) must hold every attack below.
const defaultBoundMiB = 256

// scale of one run: TESTBED_SCALE=full for `make testbed`, a short run otherwise.
type scale struct {
	Name string
	Full bool
}

func currentScale() scale {
	if os.Getenv("TESTBED_SCALE") == "full" {
		return scale{Name: "full", Full: true}
	}
	return scale{Name: "short"}
}

// pick is short at short scale and full at full scale.
func pick[T any](short, full T) T {
	if currentScale().Full {
		return full
	}
	return short
}

type ports = collectortest.DefaultPorts

// Target is one collector process on a shipped config, its listeners moved to free loopback ports.
type Target struct {
	t      *testing.T
	C      *collectortest.Collector
	Dir    string
	Config string // "default" or "daemonset"
	Ports  ports
	// BoundMiB is the peak resident memory every attack must stay under: 256 MiB for the default config, the
	// container's memory limit for the DaemonSet's.
	BoundMiB float64
	// Token is the bearer token the OPA endpoint requires ("" when it requires none).
	Token string
	// Sink receives what the DaemonSet's config exports with otlp_http; nil for the default config, which writes
	// to ./data/results.
	Sink *collectortest.OTLPSink

	env     []string
	configs []string
}

func distDir(t *testing.T) string {
	return filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy")
}

func writeFile(t *testing.T, path, content string) string {
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// StartDefault runs the default config (distributions/otelcol-policy/config.yaml, what `make run` runs) with its
// listeners on free ports and, when set, the test's own overlay extra (YAML merged last).
func StartDefault(t *testing.T, extra string, env ...string) *Target {
	dir := t.TempDir()
	overlay, p := collectortest.DefaultConfigOverlay(t, dir)
	configs := []string{collectortest.DefaultConfig(t), overlay}
	if extra != "" {
		configs = append(configs, writeFile(t, filepath.Join(dir, "extra.yaml"), extra))
	}
	tg := &Target{t: t, Dir: dir, Config: "default", Ports: p, BoundMiB: defaultBoundMiB, configs: configs,
		env: append([]string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig")}, env...)}
	tg.start()
	return tg
}

// daemonSetPaths are the DaemonSet config's host paths and listeners, and what a test run uses instead. The
// config is used as shipped but for these strings, so that every limit it sets is the one tested.
var daemonSetPaths = []string{
	"0.0.0.0:8182", "opa",
	"0.0.0.0:13133", "health",
	"0.0.0.0:9464", "policyMetrics",
	"/var/lib/otelcol-policy-node/queue", "queue",
	"/var/run/otelcol-policy/decisions.sock", "socket",
	"/var/run/secrets/otelcol-policy/opa-token/token", "token",
}

// shipped is what a mode of kubernetes/ ships for the collector: the config of its configmap.yaml, and the
// memory limit (in MiB) and environment of the otelcol-policy container of its workload.
type shipped struct {
	config   string
	limitMiB float64
	env      []string
}

// shippedPod reads the shipped config of mode and its container in workloadFile (a DaemonSet or Deployment).
func shippedPod(t *testing.T, mode, workloadFile string) shipped {
	k8s := filepath.Join(distDir(t), "kubernetes", mode)
	var cm corev1.ConfigMap
	b, err := os.ReadFile(filepath.Join(k8s, "configmap.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &cm))
	var workload struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	b, err = os.ReadFile(filepath.Join(k8s, workloadFile))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &workload))
	for _, c := range workload.Spec.Template.Spec.Containers {
		if c.Name != "otelcol-policy" {
			continue
		}
		limit := c.Resources.Limits.Memory()
		require.False(t, limit.IsZero(), "%s: the otelcol-policy container has a memory limit", workloadFile)
		sp := shipped{config: cm.Data["config.yaml"], limitMiB: float64(limit.Value()) / mib}
		for _, e := range c.Env {
			sp.env = append(sp.env, e.Name+"="+e.Value)
		}
		return sp
	}
	t.Fatalf("%s has no otelcol-policy container", workloadFile)
	return shipped{}
}

// configs writes config (the shipped one with the test's paths and ports) into dir, and an overlay that gives
// memory_limiter the container's limit in MiB (its percentages are of a cgroup's limit, which a process outside
// one cannot see) and exposes the self-metrics on metricsPort.
func (sp shipped) configs(t *testing.T, dir, config string, metricsPort int) []string {
	return []string{
		writeFile(t, filepath.Join(dir, "config.yaml"), config),
		writeFile(t, filepath.Join(dir, "limits.yaml"), fmt.Sprintf(`
processors:
  memory_limiter:
    limit_percentage: 0
    spike_limit_percentage: 0
    limit_mib: %d
    spike_limit_mib: %d
service:
  telemetry:
%s`, int(sp.limitMiB*0.8), int(sp.limitMiB*0.2), collectortest.MetricsTelemetry(metricsPort))),
	}
}

// StartDaemonSet runs the DaemonSet's config (kubernetes/daemonset/configmap.yaml) as its pod would: its
// environment, GOMEMLIMIT and memory limit from daemonset.yaml, the bearer token of the OPA endpoint in the file
// the Secret would mount, and OTLP_ENDPOINT pointing at a sink. The memory_limiter's percentages are of the
// container's memory limit, which a process outside a cgroup cannot see: the overlay gives it the same figures
// in MiB.
func StartDaemonSet(t *testing.T, extra string, env ...string) *Target {
	sp := shippedPod(t, "daemonset", "daemonset.yaml")
	config := sp.config

	dir := t.TempDir()
	p := ports{Health: collectortest.FreePort(t), OPA: collectortest.FreePort(t), Metrics: collectortest.FreePort(t),
		PolicyMetrics: collectortest.FreePort(t)}
	token := "hostile-test-token-0123456789abcdef"
	sink := collectortest.StartOTLPSink(t)
	replacements := map[string]string{
		"opa":           fmt.Sprintf("127.0.0.1:%d", p.OPA),
		"health":        fmt.Sprintf("127.0.0.1:%d", p.Health),
		"policyMetrics": fmt.Sprintf("127.0.0.1:%d", p.PolicyMetrics),
		"queue":         filepath.Join(dir, "queue"),
		"socket":        filepath.Join(dir, "run", "decisions.sock"),
		"token":         writeFile(t, filepath.Join(dir, "opa-token"), token),
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "queue"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run"), 0o700))
	for i := 0; i < len(daemonSetPaths); i += 2 {
		require.Contains(t, config, daemonSetPaths[i], "the DaemonSet config names %s", daemonSetPaths[i])
		config = strings.ReplaceAll(config, daemonSetPaths[i], replacements[daemonSetPaths[i+1]])
	}
	configs := sp.configs(t, dir, config, p.Metrics)
	if extra != "" {
		configs = append(configs, writeFile(t, filepath.Join(dir, "extra.yaml"), extra))
	}
	envs := append([]string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig"), "CLUSTER_NAME=hostile",
		"OTLP_ENDPOINT=" + sink.URL}, sp.env...)
	tg := &Target{t: t, Dir: dir, Config: "daemonset", Ports: p, BoundMiB: sp.limitMiB, Token: token, Sink: sink,
		configs: configs, env: append(envs, env...)}
	tg.start()
	return tg
}

func (tg *Target) start() {
	tg.C = collectortest.StartEnv(tg.t, tg.Dir, tg.env, tg.configs...)
	tg.C.WaitHealthy(tg.healthURL())
}

// Restart stops the collector (SIGTERM, a clean shutdown) and starts it again on the same directory, configs
// and ports.
func (tg *Target) Restart() {
	tg.C.Stop()
	tg.start()
}

func (tg *Target) healthURL() string { return collectortest.HealthURL(tg.Ports.Health) }

// MetricsURL is the collector's Prometheus endpoint.
func (tg *Target) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", tg.Ports.Metrics)
}

// OPAURL is where OPA's decision_logs plugin posts.
func (tg *Target) OPAURL() string { return fmt.Sprintf("http://127.0.0.1:%d/logs", tg.Ports.OPA) }

// SocketPath is the NDJSON Unix socket of the config.
func (tg *Target) SocketPath() string {
	if tg.Config == "daemonset" {
		return filepath.Join(tg.Dir, "run", "decisions.sock")
	}
	return filepath.Join(tg.Dir, "data", "decisions.sock")
}

// Alive fails the test unless the process runs and its health check answers 200.
func (tg *Target) Alive() {
	tg.t.Helper()
	select {
	case <-tg.C.Exited():
		tg.t.Fatalf("the collector exited:\n%s", tg.C.Output())
	default:
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(tg.healthURL())
	require.NoError(tg.t, err, "health check")
	resp.Body.Close()
	require.Equal(tg.t, http.StatusOK, resp.StatusCode, "health check")
}

// WaitBounded waits until done returns nil, failing as soon as the collector exits or its peak resident memory
// passes the bound: an attack that works is stopped before it takes the machine's memory.
func (tg *Target) WaitBounded(timeout time.Duration, done func() error) {
	tg.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-tg.C.Exited():
			tg.t.Fatalf("the collector exited:\n%s", tg.C.Output())
		default:
		}
		if peak := tg.PeakMiB(); peak > tg.BoundMiB {
			tg.t.Fatalf("peak resident memory %.0f MiB, over the bound of %.0f MiB", peak, tg.BoundMiB)
		}
		err := done()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tg.t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ResetPeak starts measuring a new peak of resident memory.
func (tg *Target) ResetPeak() {
	require.NoError(tg.t, procsample.ResetPeak(tg.C.Pid()))
}

// PeakMiB is the peak resident memory since the last ResetPeak (or the start).
func (tg *Target) PeakMiB() float64 {
	m, err := procsample.ReadMemory(tg.C.Pid())
	require.NoError(tg.t, err)
	return m.HWM
}

// Metric is a self-metric summed over the series whose labels contain labels; 0 while it is not exposed.
func (tg *Target) Metric(name, labels string) float64 {
	v, err := selfmetrics.ReadCounter(tg.MetricsURL(), name, labels)
	require.NoError(tg.t, err)
	return v
}

// PostOPA uploads a body as OPA's decision_logs plugin does (gzip when zipped), with the target's token.
func (tg *Target) PostOPA(ctx context.Context, body []byte, zipped bool) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tg.OPAURL(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if zipped {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if tg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+tg.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// gzipped compresses b.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// opaUpload is an upload of OPA decision events with the given ids.
func opaUpload(ids []string) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"decision_id":%q,"path":"kubernetes/admission","input":{"user":"legit"},"result":true,"timestamp":"2026-11-23T08:00:00Z"}`, id)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// Decisions counts the decisions delivered so far by id: from ./data/results for the default config, from the
// sink for the DaemonSet's.
func (tg *Target) Decisions() map[string]int {
	out := map[string]int{}
	count := func(res pcommon.Resource, lr plog.LogRecord) {
		if d, err := policyresult.ReadDecisionLogRecord(res, lr); err == nil {
			out[d.ID]++
		}
	}
	if tg.Sink != nil {
		tg.Sink.Each(count)
	} else {
		collectortest.EachFileRecord(tg.t, filepath.Join(tg.Dir, "data", "results", "policy-results.jsonl"), count)
	}
	return out
}

// WaitDecisions waits until every id was delivered.
func (tg *Target) WaitDecisions(ids []string, timeout time.Duration) {
	tg.t.Helper()
	tg.WaitBounded(timeout, func() error {
		got := tg.Decisions()
		missing := 0
		for _, id := range ids {
			if got[id] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d legitimate decisions not delivered", missing, len(ids))
		}
		return nil
	})
}

// Legit is legitimate traffic during an attack: an OPA-like client uploading a few decisions at a fixed
// interval, each upload retried as OPA retries it (on a refusal or an error) until it is accepted.
type Legit struct {
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	accepted []string
	refusals int
}

// retryAfterStop bounds how long an upload refused during the attack is retried after it.
const retryAfterStop = 30 * time.Second

// StartLegitOPA starts legitimate uploads of 10 decisions every 100 ms.
func (tg *Target) StartLegitOPA(name string) *Legit {
	l := &Legit{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			ids := make([]string, 10)
			for i := range ids {
				ids[i] = fmt.Sprintf("legit-%s-%d-%d", name, n, i)
			}
			body := gzipped(opaUpload(ids))
			var giveUp time.Time
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				code, err := tg.PostOPA(ctx, body, true)
				cancel()
				if err == nil && code == http.StatusOK {
					break
				}
				l.mu.Lock()
				l.refusals++
				l.mu.Unlock()
				// The upload in hand was sent during the attack: like OPA, keep retrying it after the attack
				// ended (a short attack can end before the first retry), for at most retryAfterStop.
				if giveUp.IsZero() {
					select {
					case <-l.stop:
						giveUp = time.Now().Add(retryAfterStop)
					default:
					}
				}
				if !giveUp.IsZero() && time.Now().After(giveUp) {
					return // never accepted: it is not owed
				}
				time.Sleep(200 * time.Millisecond)
			}
			l.mu.Lock()
			l.accepted = append(l.accepted, ids...)
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

// Stop ends the traffic and returns the ids the collector accepted, and how often an upload had to be retried.
func (l *Legit) Stop() (accepted []string, refusals int) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted, l.refusals
}

// attackResult is what an attack reports ($TESTBED_RESULTS_DIR/hostile-<name>.json, in RESULTS.md).
type attackResult struct {
	Attack         string             `json:"attack"`
	Config         string             `json:"config"`
	Scale          string             `json:"scale"`
	PeakRSSMiB     float64            `json:"peak_rss_mib"`
	BoundMiB       float64            `json:"bound_mib"`
	LegitAccepted  int                `json:"legit_accepted"`
	LegitRefusals  int                `json:"legit_refusals"`
	LegitDelivered int                `json:"legit_delivered"`
	Counted        map[string]float64 `json:"counted,omitempty"`
}

// Attack runs one attack against the target: the peak is reset, legitimate OPA uploads run while attack runs,
// then every accepted legitimate decision must be delivered, the collector must be up, and its peak resident
// memory under the target's bound. attack returns what the collector counted of it (self-metrics), which the
// test asserts and the result reports.
func (tg *Target) Attack(name string, attack func() map[string]float64) attackResult {
	tg.t.Helper()
	tg.ResetPeak()
	legit := tg.StartLegitOPA(name)
	counted := attack()
	accepted, refusals := legit.Stop()
	tg.Alive()
	peak := tg.PeakMiB()
	tg.WaitDecisions(accepted, 60*time.Second)
	r := attackResult{Attack: name, Config: tg.Config, Scale: currentScale().Name, PeakRSSMiB: peak, BoundMiB: tg.BoundMiB,
		LegitAccepted: len(accepted), LegitRefusals: refusals, LegitDelivered: len(accepted), Counted: counted}
	tg.t.Logf("%s on the %s config: peak RSS %.0f MiB (bound %.0f), %d legitimate decisions delivered (%d refusals on the way), counted %v",
		name, tg.Config, peak, tg.BoundMiB, len(accepted), refusals, counted)
	_, err := procsample.WriteResult(fmt.Sprintf("hostile-%s-%s-%s", name, tg.Config, r.Scale), r)
	require.NoError(tg.t, err)
	require.Less(tg.t, peak, tg.BoundMiB, "%s: peak resident memory of the collector on the %s config", name, tg.Config)
	require.NotEmpty(tg.t, accepted, "%s: legitimate traffic got through during the attack", name)
	return r
}
