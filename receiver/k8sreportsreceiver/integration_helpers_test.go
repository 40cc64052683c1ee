// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filestoragetest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/statustest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/metadatatest"
)

// cluster is the control plane shared by this package's integration tests (TestMain).
var cluster *apiserver.Cluster

// setupCluster runs before the tests (the generated TestMain calls it): it starts etcd and kube-apiserver,
// which die with the test process.
func setupCluster() {
	flag.Parse()
	if testing.Short() {
		return
	}
	c, err := apiserver.StartShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test control plane:", err)
		os.Exit(1)
	}
	cluster = c
}

func needCluster(t *testing.T) {
	t.Helper()
	if cluster == nil {
		t.Skip("integration test: needs etcd and kube-apiserver (skipped with -short)")
	}
}

var (
	policyReportGVR        = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	clusterPolicyReportGVR = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}
	openReportGVR          = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}
	vulnReportGVR          = schema.GroupVersionResource{Group: "aquasecurity.github.io", Version: "v1alpha1", Resource: "vulnerabilityreports"}
)

// msgKindNotServed is what the receiver logs when discovery finds a report kind not served.
const msgKindNotServed = "Report kind not served; watching for its CRD to be installed"

// currentRV is the resource version of an object in the control plane.
func currentRV(t *testing.T, gvr schema.GroupVersionResource, namespace, name string) string {
	t.Helper()
	_, dc := cluster.Clients(t)
	obj, err := dc.Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return obj.GetResourceVersion()
}

func crdFile(name string) string { return filepath.Join("testdata", "crds", name+".yaml") }

var storageID = filestoragetest.ID

// testReceiver is a running receiver with its sink, host and self-telemetry.
type testReceiver struct {
	t         *testing.T
	rcv       *reportsReceiver
	sink      *consumertest.LogsSink
	host      *statustest.Host
	telemetry *componenttest.Telemetry
	storage   extension.Extension
	progress  *progress
	stopped   bool
}

// testConfig is the receiver configuration of a test: the test's own label, so that tests sharing the control
// plane never see each other's reports, and fast discovery.
func testConfig(t *testing.T) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.ClusterName = "test-cluster"
	cfg.LabelSelector = "otelcol-test=" + testLabel(t)
	cfg.DiscoveryInterval = time.Second
	return cfg
}

func testLabel(t *testing.T) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

// startReceiver runs a receiver authenticated with token; storageDir, when set, backs a file_storage extension.
func startReceiver(t *testing.T, cfg *Config, token, storageDir string) *testReceiver {
	t.Helper()
	return startReceiverWith(t, cfg, token, storageDir, map[component.ID]component.Component{})
}

// startReceiverWith is startReceiver on a host that has the extensions ext.
func startReceiverWith(t *testing.T, cfg *Config, token, storageDir string, ext map[component.ID]component.Component) *testReceiver {
	t.Helper()
	tr := newTestReceiver(t, cfg, cluster.Kubeconfig(t, token), storageDir, ext, nil)
	tr.start()
	return tr
}

// startReceiverInto is startReceiverWith with the records going to next instead of the sink.
func startReceiverInto(t *testing.T, cfg *Config, token, storageDir string, ext map[component.ID]component.Component, next consumer.Logs) *testReceiver {
	t.Helper()
	tr := newTestReceiver(t, cfg, cluster.Kubeconfig(t, token), storageDir, ext, next)
	tr.start()
	return tr
}

// newTestReceiver builds a receiver for the API server of kubeconfig, with the hooks that tell the test what
// it did; next nil means a sink the test reads. start runs it.
func newTestReceiver(t *testing.T, cfg *Config, kubeconfig, storageDir string, ext map[component.ID]component.Component, next consumer.Logs) *testReceiver {
	t.Helper()
	t.Setenv("KUBECONFIG", kubeconfig)
	tr := &testReceiver{t: t, host: statustest.NewHost(ext), telemetry: componenttest.NewTelemetry(), progress: newProgress()}
	if next == nil {
		tr.sink = new(consumertest.LogsSink)
		next = tr.sink
	}
	if storageDir != "" {
		tr.storage = filestoragetest.Start(t, storageDir)
		tr.host.Extensions[storageID] = tr.storage
		cfg.Storage = &storageID
	}
	require.NoError(t, cfg.Validate())
	set := metadatatest.NewSettings(tr.telemetry)
	set.Logger = tr.progress.logger(set.Logger)
	rcv, err := newReceiver(cfg, set, tr.progress.consumer(next))
	require.NoError(t, err)
	rcv.hooks = tr.progress.hooks()
	tr.rcv = rcv
	return tr
}

func (tr *testReceiver) start() {
	tr.t.Helper()
	require.NoError(tr.t, tr.rcv.Start(context.Background(), tr.host))
	tr.t.Cleanup(tr.stop)
}

func (tr *testReceiver) stop() {
	if tr.stopped {
		return
	}
	tr.stopped = true
	require.NoError(tr.t, tr.rcv.Shutdown(context.Background()))
	if tr.storage != nil {
		require.NoError(tr.t, tr.storage.Shutdown(context.Background()))
	}
}

// record is a received record as the tests compare it.
type record struct {
	policyresult.Result
	Body map[string]any
}

func (tr *testReceiver) records() []record {
	var out []record
	for _, ld := range tr.sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				require.Equal(tr.t, metadata.ScopeName, sl.Scope().Name())
				for _, lr := range sl.LogRecords().All() {
					read := policyresult.ReadLogRecord
					if policyresult.EventName(lr) == policyresult.EventScan {
						read = policyresult.ReadScanRecord
					}
					r, err := read(rl.Resource(), lr)
					require.NoError(tr.t, err)
					rec := record{Result: r}
					if lr.Body().Type() == pcommon.ValueTypeMap {
						rec.Body = lr.Body().Map().AsRaw()
					}
					out = append(out, rec)
				}
			}
		}
	}
	return out
}

// waitRecords waits until n records arrived and the emitter is idle, so that every record the changes that
// made them cause was delivered, and returns them sorted by state, policy, rule and resource, so that tests
// compare exact lists. More than n records fails the test.
func (tr *testReceiver) waitRecords(n int) []record {
	tr.t.Helper()
	return tr.waitRecordsWithin(n, 30*time.Second)
}

func (tr *testReceiver) waitRecordsWithin(n int, timeout time.Duration) []record {
	tr.t.Helper()
	tr.progress.wait(tr.t, timeout, func() bool { return tr.sink.LogRecordCount() >= n && tr.emitterIdle() },
		func() string {
			return fmt.Sprintf("%d of %d records: %s", tr.sink.LogRecordCount(), n, describe(tr.records()))
		})
	recs := tr.records()
	if len(recs) != n {
		tr.t.Fatalf("want exactly %d records, got %d: %s", n, len(recs), describe(recs))
	}
	sortRecords(recs)
	tr.sink.Reset()
	return recs
}

// quietAfter asserts that nothing arrived once the watchers handed over everything up to the given versions
// and the emitter went idle: whatever those versions cause has been delivered by then.
func (tr *testReceiver) quietAfter(versions ...seenVersion) {
	tr.t.Helper()
	tr.settle(versions...)
	if recs := tr.records(); len(recs) > 0 {
		tr.t.Fatalf("want no records, got %d: %s", len(recs), describe(recs))
	}
}

// settle waits until the watchers handed over everything up to the given versions and the emitter is idle.
func (tr *testReceiver) settle(versions ...seenVersion) {
	tr.t.Helper()
	tr.progress.wait(tr.t, 30*time.Second, func() bool {
		for _, v := range versions {
			if !tr.progress.reached(v) {
				return false
			}
		}
		return tr.emitterIdle()
	}, func() string {
		return fmt.Sprintf("versions %v; seen %v; emitter idle %v", versions, tr.progress.seen(), tr.emitterIdle())
	})
}

// waitDiscovered waits until discovery answered for gvr: its kind is not served, or its watcher listed it.
func (tr *testReceiver) waitDiscovered(gvr schema.GroupVersionResource) {
	tr.t.Helper()
	tr.progress.wait(tr.t, 30*time.Second, func() bool {
		return tr.progress.logged(msgKindNotServed) || tr.progress.reached(seenVersion{gvr: gvr})
	}, func() string { return "discovery did not answer for " + gvr.String() })
}

// waitLog waits until the receiver logged msg.
func (tr *testReceiver) waitLog(msg string) {
	tr.t.Helper()
	tr.progress.wait(tr.t, 30*time.Second, func() bool { return tr.progress.logged(msg) }, func() string { return "no log " + msg })
}

// emitterIdle says whether the receiver leads and its emitter waits with nothing to do.
func (tr *testReceiver) emitterIdle() bool {
	tr.rcv.mu.Lock()
	t := tr.rcv.tracker
	leading := tr.rcv.cancel != nil
	tr.rcv.mu.Unlock()
	if !leading {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idle && len(t.order) == 0
}

func sortRecords(recs []record) {
	sort.Slice(recs, func(i, j int) bool { return sortKey(recs[i]) < sortKey(recs[j]) })
}

func sortKey(r record) string {
	return strings.Join([]string{string(r.State), r.Report.Name, r.Policy, r.Rule, r.Resource.Namespace, r.Resource.Name}, "|")
}

func describe(recs []record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "\n  %s %s/%s %s %s/%s -> %s", r.State, r.Policy, r.Rule, r.Resource.Kind, r.Resource.Namespace, r.Resource.Name, r.Outcome)
	}
	return b.String()
}

// summary is a compact form of a record for exact comparisons.
func summary(r record) string {
	if s := r.Scan; s != nil {
		run := ""
		if s.Index != nil {
			run = " run " + strconv.FormatInt(*s.Index, 10)
		}
		if s.Scans != nil {
			run = " of " + strconv.FormatInt(s.Scans.Total, 10) + " scans"
		}
		return fmt.Sprintf("scan %s %s%s -> %s", r.Source, r.Policy, run, r.Outcome)
	}
	return fmt.Sprintf("%s %s %s/%s %s/%s/%s -> %s", r.State, r.Source, r.Policy, r.Rule, r.Resource.Kind, r.Resource.Namespace, r.Resource.Name, r.Outcome)
}

func summaries(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = summary(r)
	}
	return out
}

// object builds a report object from YAML, labelled for the test.
func object(t *testing.T, yml string) *unstructured.Unstructured {
	t.Helper()
	path := filepath.Join(t.TempDir(), "obj.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yml), 0o600))
	objs := apiserver.Objects(t, path)
	require.Len(t, objs, 1)
	labels := objs[0].GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["otelcol-test"] = testLabel(t)
	objs[0].SetLabels(labels)
	return objs[0]
}

// assertErrorCount checks the receiver's error self-metric for one kind and reason.
func assertErrorCount(t *testing.T, tr *testReceiver, kind, reason string, want int64) {
	t.Helper()
	assert.Equal(t, want, errorCount(tr, kind, reason), "errors{kind=%s, reason=%s}", kind, reason)
}

// errorCount reads the receiver's error self-metric for one kind and reason; 0 before any error.
func errorCount(tr *testReceiver, kind, reason string) int64 {
	m, err := tr.telemetry.GetMetric("otelcol_receiver_k8s_reports_errors")
	if err != nil {
		return 0
	}
	var got int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		k, _ := dp.Attributes.Value("kind")
		r, _ := dp.Attributes.Value("reason")
		if k.AsString() == kind && r.AsString() == reason {
			got += dp.Value
		}
	}
	return got
}
