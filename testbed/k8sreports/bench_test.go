// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package k8sreports benchmarks the k8s_reports receiver in the distribution binary against a real API server:
// the initial sync of 10,000 Pod Security Standards-shaped PolicyReports (19 results each, about 6 KB), the
// collector's peak RSS, and a burst of 1,000 changed results, for three setups (see setups). Run with
// `make bench-k8sreports`; with $TESTBED_RESULTS_DIR set, each run also writes the collector's memory and
// throughput over time (testbed/internal/procsample).
package k8sreports

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/pssreports"
)

const (
	namespaces     = 50
	defaultReports = 10000
	changedReports = 1000
)

// reportCount is how many reports the benchmark creates: BENCH_REPORTS, default 10,000; the scale run of the
// testbed sets 50,000.
func reportCount(b *testing.B) int {
	v := os.Getenv("BENCH_REPORTS")
	if v == "" {
		return defaultReports
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, "BENCH_REPORTS")
	require.Positive(b, n, "BENCH_REPORTS")
	return n
}

var gvr = pssreports.GVR

// setup is one collector configuration the benchmark measures.
type setup struct {
	name        string // the sub-benchmark's name
	gomemlimit  string // GOMEMLIMIT of the collector, "" for the Go runtime's default
	memoryQueue bool   // the exporter's queue in memory instead of on file_storage
	bin         string // the collector binary, when not the one collectortest.Binary names
}

// setups are the three configurations of testbed/results: the default config's persistent queue with the Go
// runtime's defaults, with the documented GOMEMLIMIT, and an in-memory queue (the receiver without the queue's
// memory-mapped file). BENCH_GOMEMLIMIT and/or BENCH_QUEUE=memory select one setup of their own instead.
//
// BENCH_COMPARE_BIN names a second collector binary (of another commit, say): every setup then also runs with it,
// as "<setup>_compare", right after the setup's own run against the same API server and reports. Medians of
// separate runs drift by more than a refactor's effect on this shared machine; alternating runs do not.
func setups() []setup {
	base := baseSetups()
	compare := os.Getenv("BENCH_COMPARE_BIN")
	if compare == "" {
		return base
	}
	var both []setup
	for _, s := range base {
		c := s
		c.name, c.bin = s.name+"_compare", compare
		both = append(both, s, c)
	}
	return both
}

func baseSetups() []setup {
	limit, queue := os.Getenv("BENCH_GOMEMLIMIT"), os.Getenv("BENCH_QUEUE")
	if limit == "" && queue == "" {
		return []setup{
			{name: "persistent"},
			{name: "persistent_gomemlimit=100MiB", gomemlimit: "100MiB"},
			{name: "memory_gomemlimit=100MiB", gomemlimit: "100MiB", memoryQueue: true},
		}
	}
	s := setup{name: "persistent", gomemlimit: limit, memoryQueue: queue == "memory"}
	if s.memoryQueue {
		s.name = "memory"
	}
	if limit != "" {
		s.name += "_gomemlimit=" + limit
	}
	return []setup{s}
}

// runs is how many times each setup is measured against the one API server: BENCH_RUNS, default 1. The testbed
// suite sets 3, so that creating the 10,000 reports (the slow part) happens once for all of its runs.
func runs(b *testing.B) int {
	v := os.Getenv("BENCH_RUNS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, "BENCH_RUNS")
	require.Positive(b, n, "BENCH_RUNS")
	return n
}

// BenchmarkK8sReports has a sub-benchmark per setup and run (e.g. persistent/run=2), each one collector from
// start to the end of the change burst; the runs of the setups alternate, so that a drift of the machine or of
// the API server spreads over all of them.
func BenchmarkK8sReports(b *testing.B) {
	cluster, stop, err := apiserver.Start(b.TempDir())
	require.NoError(b, err)
	defer stop()
	root := collectortest.RepoRoot(b)
	cluster.InstallCRDs(b, filepath.Join(root, pssreports.CRD))
	_, dc := cluster.Clients(b)

	start := time.Now()
	for n := range namespaces {
		cluster.CreateNamespace(b, fmt.Sprintf("ns-%02d", n))
	}
	total := reportCount(b)
	require.NoError(b, pssreports.Parallel(total, 32, func(i int) error {
		ns := fmt.Sprintf("ns-%02d", i%namespaces)
		_, err := dc.Resource(gvr).Namespace(ns).Create(context.Background(), pssreports.Report(ns, i, -1), metav1.CreateOptions{})
		return err
	}))
	b.Logf("created %d PolicyReports in %s", total, time.Since(start).Round(time.Millisecond))

	round := 0
	for run := 1; run <= runs(b); run++ {
		for _, s := range setups() {
			b.Run(fmt.Sprintf("%s/run=%d", s.name, run), func(b *testing.B) {
				for b.Loop() {
					round++
					runOnce(b, cluster, dc, total, s, run, round)
				}
			})
		}
	}
}

// runOnce measures one fresh collector: the initial sync of every report, then a burst of changes. round numbers
// the bursts against this API server: each writes a message of its own, so that every burst changes every
// result it touches, also in a second and third run.
func runOnce(b *testing.B, cluster *apiserver.Cluster, dc dynamic.Interface, total int, s setup, run, round int) {
	if s.bin != "" {
		b.Setenv(collectortest.BinaryEnv, s.bin)
	}
	dir := b.TempDir()
	metricsPort, pprofPort := collectortest.FreePort(b), collectortest.FreePort(b)
	cfg := fmt.Sprintf(`
extensions:
  file_storage:
    directory: %[1]s/queue
    create_directory: true
  pprof:
    endpoint: 127.0.0.1:%[3]d
receivers:
  k8s_reports:
    auth_type: kubeConfig
    cluster_name: bench
    storage: file_storage
exporters:
  durable_file:
    path: %[1]s/results.jsonl
    sending_queue:
      %[4]s
      num_consumers: 2
      batch:
        flush_timeout: 200ms
        min_size: 2000
service:
  extensions: [file_storage, pprof]
  pipelines:
    logs:
      receivers: [k8s_reports]
      exporters: [durable_file]
  telemetry:
    logs:
      level: info
      encoding: json
%[2]s`, dir, collectortest.MetricsTelemetry(metricsPort), pprofPort, queueStorage(s))
	cfgPath := filepath.Join(dir, "config.yaml")
	require.NoError(b, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	// The floor of this run, measured right before the collector starts, against the same API server state.
	floor := listFloor(b, cluster, total)

	want := float64(total * pssreports.ResultsPerReport)
	started := time.Now()
	env := []string{"KUBECONFIG=" + cluster.Kubeconfig(b, apiserver.AdminToken)}
	if s.gomemlimit != "" {
		// The collector's documented deployment setting: a soft heap limit below the container's memory limit.
		env = append(env, "GOMEMLIMIT="+s.gomemlimit)
	}
	c := collectortest.StartEnv(b, dir, env, cfgPath)
	sampler := procsample.Start(fmt.Sprintf("k8sreports-%s-run%d", s.name, run),
		fmt.Sprintf("k8s_reports: sync of 10,000 PolicyReports, then 1,000 changes (%s, run %d)", s.name, run),
		c.Pid, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), procsample.Options{
			Interval: 250 * time.Millisecond,
			Counter:  "otelcol_exporter_sent_log_records",
			Gauges:   []string{"otelcol_exporter_queue_size"},
		})
	sent := waitSent(b, metricsPort, want, time.Duration(total/10000+1)*120*time.Second)
	syncTime := time.Since(started)
	marks := []procsample.Mark{{Name: "synced", T: sampler.Elapsed()}}
	peak := peakRSS(b, c)
	if p := os.Getenv("BENCH_HEAP_PROFILE"); p != "" {
		saveProfile(b, pprofPort, p)
	}
	// The receiver's own view: every record accepted by the pipeline, which with the persistent queue means on
	// disk, before the exporter wrote the last of them.
	line := initialSyncLine(b, c, 10*time.Second)
	require.EqualValues(b, total, line.Reports)
	require.EqualValues(b, want, line.Records)
	receiverSync, err := strconv.ParseFloat(string(line.Duration), 64)
	require.NoError(b, err, "the duration of %s", line.Duration)
	b.Logf("initial sync: %.0f records exported in %s (all accepted by the pipeline after %.2f s), peak RSS %.0f MB",
		sent, syncTime.Round(time.Millisecond), receiverSync, peak)

	// One result changes in each of 1,000 reports.
	marks = append(marks, procsample.Mark{Name: "patches start", T: sampler.Elapsed()})
	burstStart := time.Now()
	require.NoError(b, pssreports.Parallel(changedReports, 32, func(i int) error {
		ns := fmt.Sprintf("ns-%02d", i%namespaces)
		j := i % pssreports.ResultsPerReport
		patch := fmt.Sprintf(`[{"op":"replace","path":"/results/%d/result","value":"fail"},`+
			`{"op":"replace","path":"/results/%d/message","value":"validation error: rule %s failed (change %d)"}]`,
			j, j, pssreports.Rules[j][1], round)
		_, err := dc.Resource(gvr).Namespace(ns).Patch(context.Background(), pssreports.Report(ns, i, -1).GetName(),
			types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}))
	applied := time.Since(burstStart)
	marks = append(marks, procsample.Mark{Name: "patches applied", T: sampler.Elapsed()})
	waitSent(b, metricsPort, want+changedReports, 60*time.Second)
	burst := time.Since(burstStart)
	b.Logf("change burst: %d changed results exported %s after the first update; the API server took %s to apply the updates, so the last record left %s after the last update",
		changedReports, burst.Round(time.Millisecond), applied.Round(time.Millisecond), (burst - applied).Round(time.Millisecond))
	b.ReportMetric((burst - applied).Seconds(), "after-last-update-s")
	peak = peakRSS(b, c)
	series := sampler.Stop()
	series.Marks = marks
	c.Stop()
	require.NoError(b, series.Write(procsample.ResultsDir()))

	restartNothingChanged(b, dir, env, cfgPath, total, metricsPort, pprofPort)

	b.ReportMetric(floor.Seconds(), "floor-s")
	b.ReportMetric(syncTime.Seconds(), "sync-s")
	b.ReportMetric(receiverSync, "receiver-sync-s")
	b.ReportMetric(peak, "peak-rss-MB")
	b.ReportMetric(burst.Seconds(), "burst-s")
	b.ReportMetric(want/syncTime.Seconds(), "records/s")
}

// restartNothingChanged starts the collector again on the storage of the run that just stopped, with no report
// changed meanwhile, and measures what a restart costs: the time from starting the process to the receiver's
// "Initial sync complete" line (every report listed again and found unchanged), which must report no record; the
// state's size on disk; the live heap once synced, per result; and the peak RSS of the restart.
func restartNothingChanged(b *testing.B, dir string, env []string, cfgPath string, total, metricsPort, pprofPort int) {
	state, err := os.Stat(filepath.Join(dir, "queue", "receiver_k8s_reports_"))
	require.NoError(b, err, "the receiver's state file")
	started := time.Now()
	c := collectortest.StartEnv(b, dir, env, cfgPath)
	line := initialSyncLine(b, c, time.Duration(total/10000+1)*60*time.Second)
	restart := time.Since(started)
	require.EqualValues(b, total, line.Reports, "reports known after the restart")
	require.Zero(b, line.Records, "records emitted after a restart with nothing changed")
	heap := liveHeap(b, pprofPort)
	sent, err := selfmetrics.ReadCounter(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "otelcol_exporter_sent_log_records", "")
	require.NoError(b, err)
	require.Zero(b, sent, "records exported after a restart with nothing changed")
	peak := peakRSS(b, c)
	c.Stop()
	results := float64(total * pssreports.ResultsPerReport)
	b.Logf("restart with nothing changed: synced %s after the process started (the receiver says %s s), no record; state file %.1f MB (%.0f bytes/result); live heap %.1f MB (%.0f bytes/result); peak RSS %.0f MB",
		restart.Round(time.Millisecond), line.Duration, float64(state.Size())/1e6, float64(state.Size())/results, heap/1e6, heap/results, peak)
	b.ReportMetric(restart.Seconds(), "restart-s")
	b.ReportMetric(float64(state.Size())/1e6, "state-MB")
	b.ReportMetric(float64(state.Size())/results, "state-bytes/result")
	b.ReportMetric(heap/results, "heap-bytes/result")
	b.ReportMetric(peak, "restart-peak-rss-MB")
}

// syncLine is the receiver's "Initial sync complete" log line.
type syncLine struct {
	Reports  int64           `json:"reports"`
	Records  int64           `json:"records"`
	Duration json.RawMessage `json:"duration"`
}

// initialSyncLine waits for the receiver's "Initial sync complete" line in the collector's JSON log.
func initialSyncLine(b *testing.B, c *collectortest.Collector, timeout time.Duration) syncLine {
	const msg = "Initial sync complete"
	c.WaitOutput(msg, timeout)
	for _, l := range strings.Split(c.Output(), "\n") {
		if strings.Contains(l, msg) {
			var line syncLine
			require.NoError(b, json.Unmarshal([]byte(l), &line), l)
			return line
		}
	}
	b.Fatalf("no %q line", msg)
	return syncLine{}
}

// liveHeap forces a garbage collection in the collector and returns the bytes of its live heap, from the heap
// profile's runtime statistics.
func liveHeap(b *testing.B, pprofPort int) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?debug=1&gc=1", pprofPort))
	require.NoError(b, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			n, err := strconv.ParseFloat(v, 64)
			require.NoError(b, err)
			return n
		}
	}
	require.NoError(b, sc.Err())
	b.Fatal("no HeapAlloc in the heap profile")
	return 0
}

// listFloor is the floor of an initial sync: a Go client that only pages through the LIST of every report, as
// the receiver does (500 a page, cluster-wide), reads each page to its end and keeps nothing but the continue
// token. No collector is as fast; the time is what the API server and etcd cost. Every run measures it right
// before its collector starts, so that the ratio of the two compares the same state of the API server.
func listFloor(b *testing.B, cluster *apiserver.Cluster, total int) time.Duration {
	cfg := cluster.Config(apiserver.AdminToken)
	cfg.QPS, cfg.Burst = 50, 100 // the receiver's defaults
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	rc := cs.CoreV1().RESTClient()
	start := time.Now()
	reports, pageBytes, cont := 0, 0, ""
	for {
		raw, err := rc.Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).
			Param("limit", "500").Param("continue", cont).DoRaw(context.Background())
		require.NoError(b, err)
		var page struct {
			Metadata struct{ Continue string }
			Items    []struct{} // counted, not kept
		}
		require.NoError(b, json.Unmarshal(raw, &page))
		reports, pageBytes = reports+len(page.Items), pageBytes+len(raw)
		if cont = page.Metadata.Continue; cont == "" {
			break
		}
	}
	elapsed := time.Since(start)
	require.Equal(b, total, reports)
	b.Logf("LIST floor: %d reports (%.1f MB of JSON) in %s", reports, float64(pageBytes)/1e6, elapsed.Round(time.Millisecond))
	return elapsed
}

// waitSent polls the collector's self-metrics until the exporter sent n log records.
func waitSent(b *testing.B, port int, n float64, timeout time.Duration) float64 {
	b.Helper()
	var got float64
	collectortest.Eventually(b, timeout, func() error {
		var err error
		got, err = selfmetrics.ReadMetric(fmt.Sprintf("http://127.0.0.1:%d/metrics", port), "otelcol_exporter_sent_log_records", "")
		if err != nil {
			return err
		}
		if got < n {
			return fmt.Errorf("%.0f of %.0f records sent", got, n)
		}
		return nil
	})
	return got
}

// peakRSS reads the process's high-water mark of resident memory (VmHWM) in MB, and logs what is resident now:
// anonymous memory (the Go heap) and file pages (the memory-mapped storage files).
func peakRSS(b *testing.B, c *collectortest.Collector) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.Pid()))
	require.NoError(b, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	fields := map[string]float64{}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.HasSuffix(v, " kB") {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			fields[k] = kb / 1024
		}
	}
	b.Logf("memory: peak %.0f MB; now resident %.0f MB = anonymous %.0f MB + file %.0f MB", fields["VmHWM"], fields["VmRSS"], fields["RssAnon"], fields["RssFile"])
	return fields["VmHWM"]
}

// saveProfile writes the collector's heap profile, for finding what holds memory (BENCH_HEAP_PROFILE=path).
func saveProfile(b *testing.B, port int, path string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", port))
	require.NoError(b, err)
	defer resp.Body.Close()
	f, err := os.Create(path)
	require.NoError(b, err)
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	require.NoError(b, err)
}

// queueStorage selects the exporter's queue: persistent on file_storage (the default config's choice), or in
// memory, which measures the receiver without the queue's memory-mapped file.
func queueStorage(s setup) string {
	if s.memoryQueue {
		return "# in-memory queue"
	}
	return "storage: file_storage"
}
