// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package handover

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/selfmetrics"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"
)

const podUID = "5f0c3f4e-8d2a-4b7e-9c1d-2a6b8e0f4c31"

// statefulSetConfig is the collector config the shipped StatefulSet mounts (its ConfigMap), as a file.
type statefulSetConfig struct {
	path string
	// leaseNamespace is where the replicas' Lease lives; the namespace must exist.
	leaseNamespace string
	// gaugeLabels are policy_metrics' results labels, the attributes of every policy.results series.
	gaugeLabels []string
	// env is the StatefulSet container's environment of literal values (GOMEMLIMIT).
	env []string
	// maxBatchRecords is the most records the receiver hands the pipeline at once; queueReplay is the most
	// result records the exporter's persistent queue can export again after a SIGKILL (see bounds).
	maxBatchRecords, queueReplay int
}

func loadStatefulSetConfig(t *testing.T) statefulSetConfig {
	deployment := filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "kubernetes", "deployment")
	var text string
	for _, o := range apiserver.Objects(t, filepath.Join(deployment, "configmap.yaml")) {
		if o.GetKind() == "ConfigMap" {
			text, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
	}
	require.NotEmpty(t, text, "the StatefulSet's ConfigMap has config.yaml")
	var env []string
	for _, o := range apiserver.Objects(t, filepath.Join(deployment, "statefulset.yaml")) {
		var sts appsv1.StatefulSet
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &sts))
		for _, c := range sts.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					env = append(env, e.Name+"="+e.Value)
				}
			}
		}
	}
	require.NotEmpty(t, env, "the StatefulSet sets GOMEMLIMIT")
	var cfg struct {
		Extensions struct {
			Elector struct {
				LeaseNamespace string `json:"lease_namespace"`
			} `json:"k8s_leader_elector"`
		}
		Connectors struct {
			Metrics struct {
				Results struct{ Labels []string }
			} `json:"policy_metrics"`
		}
		Exporters map[string]map[string]any
	}
	require.NoError(t, yaml.Unmarshal([]byte(text), &cfg))
	c := statefulSetConfig{
		path:           filepath.Join(t.TempDir(), "config.yaml"),
		leaseNamespace: cfg.Extensions.Elector.LeaseNamespace,
		env:            env,
		gaugeLabels:    cfg.Connectors.Metrics.Results.Labels,
	}
	require.NoError(t, os.WriteFile(c.path, []byte(text), 0o600))
	require.NotEmpty(t, c.leaseNamespace)
	require.NotEmpty(t, c.gaugeLabels)

	// The receiver's batch size is its default (the config does not set it).
	c.maxBatchRecords = k8sreportsreceiver.NewFactory().CreateDefaultConfig().(*k8sreportsreceiver.Config).MaxBatchRecords
	// The bound is about the queue of the records' exporter; the prometheus exporter serves policy_metrics'
	// series and queues nothing.
	for name, raw := range cfg.Exporters {
		if name == "prometheus" {
			continue
		}
		require.Equal(t, "otlp_http", name, "the records leave through one exporter, whose queue the bound is about")
		exp := otlphttpexporter.NewFactory().CreateDefaultConfig().(*otlphttpexporter.Config)
		require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(exp))
		q := exp.QueueConfig.Get()
		require.NotNil(t, q, "the exporter has a sending_queue")
		require.True(t, q.Batch.HasValue(), "the queue batches")
		// An export that reached the sink but was not yet marked done in the queue when the process died is
		// exported again by the restarted replica. At most num_consumers exports run at once; one is at most
		// max_size records, or without max_size, what waited below min_size plus one request of the receiver.
		b := q.Batch.Get()
		perExport := int(b.MaxSize)
		if perExport == 0 {
			perExport = int(b.MinSize) - 1 + c.maxBatchRecords
		}
		c.queueReplay = q.NumConsumers * perExport
	}
	require.Positive(t, c.queueReplay, "the records' exporter has a bounded queue")
	return c
}

// replica is one collector of the StatefulSet: its own queue directory and ports, which it keeps across a
// restart as a StatefulSet's Pod keeps its claim and name, and the state directory it shares with the others.
type replica struct {
	name            string
	dir             string
	env             []string
	configs         []string
	health, metrics int
	// running is the current process; the sampler reads it from its goroutine.
	running          atomic.Pointer[collectortest.Collector]
	started, stopped time.Time
}

// newReplica configures replica name of the config, its state in shared, its exports to endpoint, competing for
// lease; only what differs outside a Pod changes (collectortest.ReplicaOverlay).
func newReplica(t *testing.T, cfg statefulSetConfig, kubeconfig, shared, name, lease, endpoint string) *replica {
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	r := &replica{name: name, dir: dir, health: collectortest.FreePort(t), metrics: collectortest.FreePort(t)}
	overlay := filepath.Join(dir, "overlay.yaml")
	collectortest.ReplicaOverlay{Health: r.health, Metrics: r.metrics, Shared: shared, Queue: filepath.Join(dir, "queue"),
		Lease: lease}.Write(t, overlay)
	r.configs = []string{cfg.path, overlay}
	r.env = append(slices.Clone(cfg.env), "KUBECONFIG="+kubeconfig, "CLUSTER_NAME="+cluster, "OTLP_ENDPOINT="+endpoint,
		// The downward API's values: the Pod the k8s_events extension records Events on (none exists here).
		"K8S_POD_NAME=otelcol-policy-"+name, "K8S_POD_NAMESPACE="+cfg.leaseNamespace, "K8S_POD_UID="+podUID)
	return r
}

// start runs the replica, or runs it again on the same directories and ports.
func (r *replica) start(t *testing.T) {
	r.running.Store(collectortest.StartEnv(t, r.dir, r.env, r.configs...))
	r.started = time.Now()
}

// c is the replica's current process.
func (r *replica) c() *collectortest.Collector { return r.running.Load() }

func (r *replica) healthy() { r.c().WaitHealthy(collectortest.HealthURL(r.health)) }

// kill ends the process with SIGKILL, as an OOM kill or a node failure does, and waits until it is gone.
func (r *replica) kill(t *testing.T) {
	require.NoError(t, syscall.Kill(r.c().Pid(), syscall.SIGKILL))
	<-r.c().Exited()
	r.stopped = time.Now()
}

// pid is the running process's id, 0 while none runs: for the sampler, which reads it from its goroutine.
func (r *replica) pid() int {
	c := r.c()
	if c == nil {
		return 0
	}
	select {
	case <-c.Exited():
		return 0
	default:
		return c.Pid()
	}
}

func (r *replica) metricsURL() string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", r.metrics) }

// metric is the sum of the series of a self-metric whose line contains labels; an error while it is not exposed.
func (r *replica) metric(name, labels string) (float64, error) {
	return selfmetrics.ReadMetric(r.metricsURL(), name, labels)
}

// counter is a self-metric counter that may not be exposed yet: a counter appears with its first count.
func (r *replica) counter(t *testing.T, name, labels string) float64 {
	t.Helper()
	v, err := selfmetrics.ReadCounter(r.metricsURL(), name, labels)
	require.NoError(t, err)
	return v
}

// waitFor polls a self-metric until ok accepts it.
func (r *replica) waitFor(t *testing.T, timeout time.Duration, name, labels string, ok func(float64) bool) {
	t.Helper()
	collectortest.Eventually(t, timeout, func() error {
		v, err := r.metric(name, labels)
		if err != nil {
			return err
		}
		if !ok(v) {
			return fmt.Errorf("replica %s: %s{%s} is %.0f", r.name, name, labels, v)
		}
		return nil
	})
}

// waitDrained waits until the replica's logs queue holds nothing: a persistent queue's size counts the requests
// being exported too, so zero means everything it accepted was sent. (The metrics' queue takes gauges every
// second; the test waits for those by their values.)
func (r *replica) waitDrained(t *testing.T, timeout time.Duration) {
	t.Helper()
	r.waitFor(t, timeout, "otelcol_exporter_queue_size", `data_type="logs"`, func(v float64) bool { return v == 0 })
}
