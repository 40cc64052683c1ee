// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package hostile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// The attacks of issue 29 on the decision_logs receiver's gatekeeper_export input, against the binary on the
// Gatekeeper sidecar's config (kubernetes/gatekeeper-sidecar): whoever can write into the export directory
// (Gatekeeper v3.23.1 makes it writable by every user) puts there what Gatekeeper never writes. Legitimate
// traffic is Gatekeeper's: audit runs written as its disk export writes them, each read before the next.

// The sidecar config's host paths and health listener, and what a test run uses instead.
var sidecarPaths = []string{
	"/tmp/violations", "export",
	"/var/lib/otelcol-policy/state", "state",
	"0.0.0.0:13133", "health",
}

const (
	gkChannel = "audit-channel"
	// gkMaxAuditResults is connection.yaml's maxAuditResults: the runs Gatekeeper keeps.
	gkMaxAuditResults = 3
	// gkFastPoll is the poll_interval of the attacks, so that each takes seconds (the sidecar polls every 5s).
	gkFastPoll = `
receivers:
  decision_logs:
    gatekeeper_export:
      poll_interval: 200ms
`
	gkAuditChanges = `
receivers:
  decision_logs:
    gatekeeper_export:
      audit_changes: true
`
	exportGapsMetric = "otelcol_receiver_decision_logs_export_gaps"
)

// StartGatekeeperSidecar runs the Gatekeeper sidecar's config (kubernetes/gatekeeper-sidecar/configmap.yaml) as
// its container would: the environment, GOMEMLIMIT and memory limit of audit-sidecar.yaml, OTLP_ENDPOINT
// pointing at a sink, the export and state volumes in the test's directory, and the overlays extra.
func StartGatekeeperSidecar(t *testing.T, extra ...string) *Target {
	sp := shippedPod(t, "gatekeeper-sidecar", "audit-sidecar.yaml")
	config := sp.config

	dir := t.TempDir()
	p := ports{Health: collectortest.FreePort(t), Metrics: collectortest.FreePort(t)}
	sink := collectortest.StartOTLPSink(t)
	replacements := map[string]string{
		"export": filepath.Join(dir, "export"),
		"state":  filepath.Join(dir, "state"),
		"health": fmt.Sprintf("127.0.0.1:%d", p.Health),
	}
	require.NoError(t, os.MkdirAll(replacements["export"], 0o777))
	for i := 0; i < len(sidecarPaths); i += 2 {
		require.Contains(t, config, sidecarPaths[i], "the sidecar config names %s", sidecarPaths[i])
		config = strings.ReplaceAll(config, sidecarPaths[i], replacements[sidecarPaths[i+1]])
	}
	configs := sp.configs(t, dir, config, p.Metrics)
	for i, e := range extra {
		configs = append(configs, writeFile(t, filepath.Join(dir, fmt.Sprintf("extra-%d.yaml", i)), e))
	}
	envs := append([]string{"KUBECONFIG=" + filepath.Join(dir, "no-kubeconfig"), "CLUSTER_NAME=hostile",
		"OTLP_ENDPOINT=" + sink.URL}, sp.env...)
	tg := &Target{t: t, Dir: dir, Config: "gatekeeper-sidecar", Ports: p, BoundMiB: sp.limitMiB, Sink: sink,
		configs: configs, env: envs}
	tg.start()
	return tg
}

// channelDir is the audit channel's directory in the export volume.
func (tg *Target) channelDir() string { return filepath.Join(tg.Dir, "export", gkChannel) }

// gkWriter writes audit runs as Gatekeeper v3.23.1's disk export does (pkg/export/disk): <audit ID with ':'
// as '_'>.txt under an exclusive flock, the started marker, one violation_audited line per violation, the
// completed marker, then unlocked, closed, renamed to .log and made writable by all, and the oldest runs beyond
// maxAuditResults deleted. Runs start a minute apart, an hour ago.
type gkWriter struct {
	t    *testing.T
	next time.Time
	runs []string
}

func newGKWriter(t *testing.T) *gkWriter {
	return &gkWriter{t: t, next: time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)}
}

// gkRun is a run written: its start and the Pods it reported.
type gkRun struct {
	start time.Time
	path  string
	pods  []string
}

// write writes a run of one violation per Pod into dir, and prunes.
func (w *gkWriter) write(dir string, pods ...string) gkRun {
	w.t.Helper()
	start := w.next
	w.next = w.next.Add(time.Minute)
	id := start.Format(time.RFC3339)
	require.NoError(w.t, os.MkdirAll(dir, 0o777))
	txt := filepath.Join(dir, strings.ReplaceAll(id, ":", "_")+".txt")
	f, err := os.OpenFile(txt, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	require.NoError(w.t, err)
	require.NoError(w.t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	var b strings.Builder
	fmt.Fprintf(&b, "{\"id\":%q,\"message\":\"audit is started\"}\n", id)
	for _, pod := range pods {
		b.WriteString(gkViolationLine(id, pod, "deny") + "\n")
	}
	fmt.Fprintf(&b, "{\"id\":%q,\"message\":\"audit is completed\"}\n", id)
	_, err = f.WriteString(b.String())
	require.NoError(w.t, err)
	require.NoError(w.t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	require.NoError(w.t, f.Close())
	log := strings.TrimSuffix(txt, ".txt") + ".log"
	require.NoError(w.t, os.Rename(txt, log))
	require.NoError(w.t, os.Chmod(log, 0o777))
	w.runs = append(w.runs, log)
	for len(w.runs) > gkMaxAuditResults {
		if err := os.Remove(w.runs[0]); !errors.Is(err, os.ErrNotExist) {
			require.NoError(w.t, err)
		}
		w.runs = w.runs[1:]
	}
	return gkRun{start: start, path: log, pods: pods}
}

// gkViolationLine is a violation_audited message of run id about Pod pod.
func gkViolationLine(id, pod, action string) string {
	return fmt.Sprintf(`{"id":%q,"details":{"missing_labels":["team"]},"eventType":"violation_audited",`+
		`"group":"constraints.gatekeeper.sh","version":"v1beta1","kind":"K8sRequiredLabels","name":"pods-need-team",`+
		`"message":"you must provide labels: {\"team\"}","enforcementAction":%q,"resourceAPIVersion":"v1",`+
		`"resourceKind":"Pod","resourceNamespace":"shop","resourceName":%q}`, id, action, pod)
}

// pods are n Pod names.
func pods(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return out
}

// gkRecord is an audit record as these tests tell them apart: the run's time (for a resolved record, the run
// that resolved it), the Pod and the change state ("" without audit_changes).
type gkRecord struct {
	run   time.Time
	pod   string
	state string
}

// gkRecords counts the audit records the sink received.
func gkRecords(tg *Target) map[gkRecord]int {
	out := map[gkRecord]int{}
	tg.Sink.Each(func(res pcommon.Resource, lr plog.LogRecord) {
		d, err := policyresult.ReadDecisionLogRecord(res, lr)
		if err != nil || d.Kind != policyresult.DecisionKindAudit {
			return
		}
		st, _ := lr.Attributes().Get(policyresult.AttrResultState)
		out[gkRecord{d.Timestamp.UTC(), d.Resource.Name, st.Str()}]++
	})
	return out
}

// waitRecords waits until every record of want was received.
func (tg *Target) waitRecords(want []gkRecord, timeout time.Duration) {
	tg.t.Helper()
	tg.WaitBounded(timeout, func() error {
		got := gkRecords(tg)
		missing := 0
		for _, r := range want {
			if got[r] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d records of Gatekeeper's runs not delivered", missing, len(want))
		}
		return nil
	})
}

// records are those of run r, all in state.
func (r gkRun) records(state string) []gkRecord {
	out := make([]gkRecord, len(r.pods))
	for i, p := range r.pods {
		out[i] = gkRecord{r.start, p, state}
	}
	return out
}

// sidecarAttack runs one attack against the sidecar, whose legitimate traffic (Gatekeeper's runs) the attack
// writes and checks itself: the peak is reset, then the collector must be up and its peak resident memory under
// the container's limit. attack returns what the collector counted of it; the result reports the records of
// Gatekeeper's runs delivered as the legitimate decisions.
func (tg *Target) sidecarAttack(name string, attack func() map[string]float64) {
	tg.t.Helper()
	tg.ResetPeak()
	counted := attack()
	tg.Alive()
	peak := tg.PeakMiB()
	delivered := 0
	for _, n := range gkRecords(tg) {
		delivered += n
	}
	r := attackResult{Attack: name, Config: tg.Config, Scale: currentScale().Name, PeakRSSMiB: peak, BoundMiB: tg.BoundMiB,
		LegitAccepted: delivered, LegitDelivered: delivered, Counted: counted}
	tg.t.Logf("%s on the %s config: peak RSS %.0f MiB (bound %.0f), %d records of Gatekeeper's runs delivered, counted %v",
		name, tg.Config, peak, tg.BoundMiB, delivered, counted)
	_, err := procsample.WriteResult(fmt.Sprintf("hostile-%s-%s-%s", name, tg.Config, r.Scale), r)
	require.NoError(tg.t, err)
	require.Less(tg.t, peak, tg.BoundMiB, "%s: peak resident memory of the collector on the %s config", name, tg.Config)
}

// waitLockedByOther waits until another process holds path's flock: the reader, while it reads the file. It
// tries every millisecond, as the reader holds it for a moment only.
func waitLockedByOther(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	locked := func() bool {
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		return errors.Is(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK)
	}
	for deadline := time.Now().Add(timeout); !locked(); time.Sleep(time.Millisecond) {
		require.False(t, time.Now().After(deadline), "the reader did not lock %s within %s", path, timeout)
	}
}

// TestGatekeeperExportFIFORenamedOverARun: a FIFO renamed over an audit run after the reader listed the
// directory and before it opened the run. Before, the reader waited in open for a writer forever: nothing was
// delivered after, health stayed green, and SIGTERM did not stop the collector. Now the file is refused as not
// regular (counted not_regular_file, the run it replaced a gap), and the reader goes on.
func TestGatekeeperExportFIFORenamedOverARun(t *testing.T) {
	tg := StartGatekeeperSidecar(t, gkFastPoll)
	w := newGKWriter(t)
	tg.sidecarAttack("gatekeeper-export-fifo", func() map[string]float64 {
		// A large run and the run after it, staged in a channel directory moved into the export volume at
		// once, so that one listing finds both; the reader reads the large one for a moment (tens of ms).
		stage := filepath.Join(tg.Dir, "stage", gkChannel)
		large := w.write(stage, pods("large", 2000)...)
		next := w.write(stage, pods("next", 10)...)
		require.NoError(t, os.Rename(stage, tg.channelDir()))
		large.path = filepath.Join(tg.channelDir(), filepath.Base(large.path))
		next.path = filepath.Join(tg.channelDir(), filepath.Base(next.path))
		w.runs = []string{large.path, next.path}

		waitLockedByOther(t, large.path, 30*time.Second)
		fifo := filepath.Join(tg.channelDir(), "planted.fifo")
		require.NoError(t, syscall.Mkfifo(fifo, 0o666))
		require.NoError(t, os.Rename(fifo, next.path))

		want := large.records("")
		for i := range 3 {
			r := w.write(tg.channelDir(), pods(fmt.Sprintf("after-%d", i), 10)...)
			want = append(want, r.records("")...)
			tg.waitRecords(want, pick(30*time.Second, 2*time.Minute))
		}
		return tg.counted("not_regular_file")
	})
	assert.Equal(t, 1.0, tg.Metric(rejectedMetric, `reason="not_regular_file"`))
	assert.Equal(t, 1.0, tg.Metric(exportGapsMetric, ""), "the run the FIFO replaced")
	for r := range gkRecords(tg) {
		assert.False(t, strings.HasPrefix(r.pod, "next-"), "the FIFO replaced that run before it was read")
	}
	// SIGTERM stops it (Stop fails the test after 30s).
	tg.C.Stop()
}

// craftedNames are .log names that sort after the audit IDs, or almost spell one; none is Gatekeeper's.
var craftedNames = []string{
	"debug.log", "zz.log", "9999-12-31T23_59_59Z.log", "2026-11-24T08_00_30.5Z.log", "2026-11-24T08:00:40Z.log",
	"admission-x.log",
}

// TestGatekeeperExportCraftedNames: files named as Gatekeeper does not name them. Before, any name sorting
// after the audit IDs was read as the newest run, and every run after it counted as read, also after a restart
// (0 of 3 delivered); with audit_changes an empty one forged a resolved record for every violation. Now they
// are counted (unknown_file) and skipped, and a file named as a run that lacks Gatekeeper's markers resolves
// nothing (incomplete_run).
func TestGatekeeperExportCraftedNames(t *testing.T) {
	t.Run("violations", func(t *testing.T) {
		tg := StartGatekeeperSidecar(t, gkFastPoll)
		w := newGKWriter(t)
		tg.sidecarAttack("gatekeeper-export-crafted-names", func() map[string]float64 {
			first := w.write(tg.channelDir(), pods("first", 5)...)
			tg.waitRecords(first.records(""), 30*time.Second)
			forged := gkViolationLine(first.start.Format(time.RFC3339), "forged", "deny") + "\n"
			for _, name := range craftedNames {
				require.NoError(t, os.WriteFile(filepath.Join(tg.channelDir(), name), []byte(forged), 0o666))
			}
			var want []gkRecord
			for i := range 3 {
				r := w.write(tg.channelDir(), pods(fmt.Sprintf("run-%d", i), 5)...)
				want = append(want, r.records("")...)
				tg.waitRecords(want, 30*time.Second)
			}
			tg.Restart()
			r := w.write(tg.channelDir(), pods("restarted", 5)...)
			tg.waitRecords(r.records(""), 30*time.Second)
			return tg.counted("unknown_file")
		})
		assert.Equal(t, float64(len(craftedNames)), tg.Metric(rejectedMetric, `reason="unknown_file"`), "each counted once since the restart")
		for r := range gkRecords(tg) {
			assert.NotEqual(t, "forged", r.pod, "nothing of a crafted file is delivered")
		}
	})
	t.Run("audit_changes", func(t *testing.T) {
		tg := StartGatekeeperSidecar(t, gkFastPoll, gkAuditChanges)
		w := newGKWriter(t)
		tg.sidecarAttack("gatekeeper-export-crafted-changes", func() map[string]float64 {
			first := w.write(tg.channelDir(), pods("pod", 5)...)
			tg.waitRecords(first.records("new"), 30*time.Second)
			// Empty: a snapshot without any violation, were it read as a run.
			require.NoError(t, os.WriteFile(filepath.Join(tg.channelDir(), "zz.log"), nil, 0o666))
			fake := first.start.Add(30*time.Second).Format("2006-01-02T15_04_05Z") + ".log"
			require.NoError(t, os.WriteFile(filepath.Join(tg.channelDir(), fake), nil, 0o666))
			second := w.write(tg.channelDir(), append(pods("pod", 5), "pod-new")...)
			tg.waitRecords([]gkRecord{{second.start, "pod-new", "new"}}, 30*time.Second)
			return tg.counted("unknown_file", "incomplete_run")
		})
		for r, n := range gkRecords(tg) {
			assert.NotEqual(t, "resolved", r.state, "no violation was resolved: %v (%d)", r, n)
		}
		assert.Equal(t, 1.0, tg.Metric(rejectedMetric, `reason="unknown_file"`))
		assert.Equal(t, 1.0, tg.Metric(rejectedMetric, `reason="incomplete_run"`))
	})
}

// TestGatekeeperExportDamagedState: the receiver's state in the sidecar's file_storage damaged while the
// collector was down. Before, the channel stopped for good (every poll failed to load it). Now the damaged
// values are counted (damaged_state), kept aside under <key>.damaged, and the channel goes on from the safest
// position: the runs on disk are sent again, the next one whole.
func TestGatekeeperExportDamagedState(t *testing.T) {
	tg := StartGatekeeperSidecar(t, gkFastPoll, gkAuditChanges)
	w := newGKWriter(t)
	damage := map[string]string{
		"gatekeeper_export/" + gkChannel + "/progress":   `{"a":"zz.log","pa":{"n":"`,
		"gatekeeper_export/" + gkChannel + "/violations": "gkv1\x14garbage",
	}
	tg.sidecarAttack("gatekeeper-export-damaged-state", func() map[string]float64 {
		first := w.write(tg.channelDir(), pods("pod", 5)...)
		tg.waitRecords(first.records("new"), 30*time.Second)
		tg.C.Stop()
		withStorage(t, filepath.Join(tg.Dir, "state"), func(client storage.Client) {
			for k, v := range damage {
				require.NoError(t, client.Set(context.Background(), k, []byte(v)))
			}
		})
		tg.start()
		tg.ResetPeak()
		second := w.write(tg.channelDir(), append(pods("pod", 5), "pod-new")...)
		tg.waitRecords([]gkRecord{{second.start, "pod-new", "new"}}, 30*time.Second)
		return tg.counted("damaged_state")
	})
	assert.Equal(t, float64(len(damage)), tg.Metric(rejectedMetric, `reason="damaged_state"`))
	tg.C.Stop()
	withStorage(t, filepath.Join(tg.Dir, "state"), func(client storage.Client) {
		for k, v := range damage {
			kept, err := client.Get(context.Background(), k+".damaged")
			require.NoError(t, err)
			assert.Equal(t, v, string(kept), "%s kept aside", k)
		}
	})
}

// withStorage opens the decision_logs receiver's storage in dir as the collector's file_storage does, while the
// collector is stopped.
func withStorage(t *testing.T, dir string, f func(storage.Client)) {
	t.Helper()
	ext := filestoragetest.Start(t, dir)
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindReceiver,
		component.MustNewID("decision_logs"), "")
	require.NoError(t, err)
	defer func() { require.NoError(t, client.Close(context.Background())) }()
	f(client)
}
