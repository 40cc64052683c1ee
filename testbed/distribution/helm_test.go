// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// The Helm chart (helm/otelcol-policy) and the kustomize manifests (kubernetes/) are one source of truth through
// TestHelmMatchesKustomize: the chart with values-ha.yaml (release otelcol-policy) and in daemonset mode
// (release otelcol-policy-node) renders the kustomize objects, field for field, but for Helm's own labels and
// annotations and three names derived from the release name.

// helmVersion is the Helm release hack/test-servers.sh builds.
const helmVersion = "v3.22.0"

// helmBinary skips t under -short: every Helm test runs helm through it.
func helmBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs helm; skipped under -short")
	}
	if p := os.Getenv("HELM_BIN"); p != "" {
		return p
	}
	bin := testproc.CachedBinary("helm", helmVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm %s not found at %s: run hack/test-servers.sh (make test does)", helmVersion, bin)
	}
	return bin
}

func chartDir(t *testing.T) string {
	return filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "helm", "otelcol-policy")
}

// runHelm runs helm offline, in a home of its own, and returns its standard output.
func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm %s:\n%s%s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// release is one way of installing the chart.
type release struct {
	name, namespace string
	args            []string // values: -f, --set
}

var (
	reportsDefault = release{"otelcol-policy", saNamespace, nil}
	reportsHA      = release{"otelcol-policy", saNamespace, []string{"-f", "values-ha.yaml"}}
	decisions      = release{"otelcol-policy-node", nodeNS, []string{"--set", "mode=daemonset"}}
)

// The values that feed the dashboards and alerts: the self-metrics scraped (podMonitor; in daemonset mode through
// the NetworkPolicy), the policy_metrics series remote-written.
var (
	remoteWrite  = []string{"--set", "prometheusRemoteWrite.endpoint=https://prometheus.example.com/api/v1/write"}
	metricsFrom  = []string{"--set-json", `networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}},"podSelector":{"matchLabels":{"app.kubernetes.io/name":"prometheus"}}}]`}
	monitoredArg = slices.Concat([]string{"--set", "podMonitor.enabled=true"}, remoteWrite, metricsFrom)
)

// monitored is rel with monitoredArg.
func monitored(rel release) release { return withArgs(rel, monitoredArg...) }

// withArgs is rel with args added to its values.
func withArgs(rel release, args ...string) release {
	return release{rel.name, rel.namespace, slices.Concat(rel.args, args)}
}

// helmTemplate renders the chart in dir (the shipped chart when empty) as rel.
func helmTemplate(t *testing.T, dir string, rel release) []*unstructured.Unstructured {
	t.Helper()
	if dir == "" {
		dir = chartDir(t)
	}
	args := []string{"template", rel.name, dir, "--namespace", rel.namespace}
	for i := 0; i < len(rel.args); i++ {
		args = append(args, rel.args[i])
		if rel.args[i] == "-f" {
			i++
			args = append(args, filepath.Join(dir, rel.args[i]))
		}
	}
	path := filepath.Join(t.TempDir(), "out.yaml")
	require.NoError(t, os.WriteFile(path, []byte(runHelm(t, args...)), 0o600))
	objs := apiserver.Objects(t, path)
	seen := map[string]bool{}
	for _, o := range objs {
		require.False(t, seen[objID(o)], "%s rendered twice", objID(o))
		seen[objID(o)] = true
		if o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			assert.Equal(t, rel.namespace, o.GetNamespace(), "%s: in the release namespace", objID(o))
		}
	}
	return objs
}

func TestHelmLint(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"-f", filepath.Join(chartDir(t), "values-ha.yaml")},
		{"--set", "mode=daemonset"},
		{"--set", "prometheusRule.enabled=true,dashboards.enabled=true,k8sEvents.enabled=true"},
		slices.Concat([]string{"--set", "podMonitor.enabled=true"}, remoteWrite, metricsFrom),
		slices.Concat([]string{"--set", "mode=daemonset,podMonitor.enabled=true"}, remoteWrite, metricsFrom),
		{"--set", "networkPolicy.enabled=false,podMonitor.enabled=true"},
		slices.Concat([]string{"--set", "serviceMonitor.enabled=true"}, metricsFrom),
		slices.Concat([]string{"--set", "mode=daemonset,serviceMonitor.enabled=true"}, noScrape, metricsFrom),
	} {
		out := runHelm(t, append([]string{"lint", "--strict", chartDir(t)}, args...)...)
		assert.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed", "%v", args)
		assert.NotContains(t, out, "[WARNING]", "%v: %s", args, out)
		assert.NotContains(t, out, "[ERROR]", "%v: %s", args, out)
	}
}

// helmOwned are the labels and annotations Helm adds to what kustomize writes.
var helmOwned = map[string]bool{
	"helm.sh/chart": true, "app.kubernetes.io/instance": true, "app.kubernetes.io/version": true,
	"app.kubernetes.io/managed-by": true, "helm.sh/resource-policy": true,
	"checksum/config": true, "checksum/settings": true,
}

// comparable is o without Helm's labels and annotations, names of the daemonset release renamed to the
// kustomize ones, and every collector config parsed (the kustomize configs carry comments).
func comparable(t *testing.T, o *unstructured.Unstructured, renames map[string]string) map[string]any {
	t.Helper()
	b, err := json.Marshal(o.Object)
	require.NoError(t, err)
	s := string(b)
	for from, to := range renames {
		s = strings.ReplaceAll(s, `"`+from+`"`, `"`+to+`"`)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if lm, ok := c.(map[string]any); ok && (k == "labels" || k == "annotations" || k == "matchLabels" || k == "selector") {
					for key := range lm {
						if helmOwned[key] {
							delete(lm, key)
						}
					}
					if len(lm) == 0 {
						delete(v, k)
						continue
					}
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(m)
	if data, ok := m["data"].(map[string]any); ok && m["kind"] == "ConfigMap" {
		if cfg, ok := data["config.yaml"].(string); ok {
			var parsed map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(cfg), &parsed), objID(o))
			data["config.yaml"] = parsed
		}
	}
	return m
}

// TestHelmMatchesKustomize: the chart renders the kustomize manifests (but their Namespaces, which a chart does
// not own): the same RBAC, security contexts, volumes, probes, resources, configs.
func TestHelmMatchesKustomize(t *testing.T) {
	kustomized := map[string]map[string]any{}
	for _, o := range kustomize(t, kubernetesDir(t)) {
		if o.GetKind() != "Namespace" {
			kustomized[objID(o)] = comparable(t, o, nil)
		}
	}
	rendered := map[string]map[string]any{}
	for _, o := range helmTemplate(t, "", reportsHA) {
		rendered[objID(o)] = comparable(t, o, nil)
	}
	renames := map[string]string{
		"otelcol-policy-node-settings":  "otelcol-policy-settings",
		"otelcol-policy-node-decisions": "otelcol-policy-decisions",
		"otelcol-policy-node-opa-token": "otelcol-policy-opa-token",
	}
	for _, o := range helmTemplate(t, "", decisions) {
		m := comparable(t, o, renames)
		rendered[objID(&unstructured.Unstructured{Object: m})] = m
	}
	require.ElementsMatch(t, keys(kustomized), keys(rendered), "the same objects")
	for id, want := range kustomized {
		assert.Equal(t, want, rendered[id], id)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestHelmValues: what the values change, beyond the kustomize-equivalent releases.
func TestHelmValues(t *testing.T) {
	t.Run("default is one replica without leader election", func(t *testing.T) {
		objs := helmTemplate(t, "", reportsDefault)
		dep := typed[appsv1.Deployment](t, find(t, objs, "Deployment", saNamespace, "otelcol-policy"))
		assert.Equal(t, int32(1), *dep.Spec.Replicas)
		for _, o := range objs {
			if o.GetKind() == "Role" {
				assert.Equal(t, "otelcol-policy-events", o.GetName(), "no lease without leader election; the k8s_events Role")
			}
		}
		pvc := typed[corev1.PersistentVolumeClaim](t, find(t, objs, "PersistentVolumeClaim", saNamespace, "otelcol-policy-state"))
		assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
		cfg := renderedConfig(t, objs, "otelcol-policy-config")
		assert.NotContains(t, cfg["extensions"], "k8s_leader_elector")
		assert.NotContains(t, cfg["receivers"].(map[string]any)["k8s_reports"], "k8s_leader_elector")
		find(t, objs, "ClusterRole", "", "otelcol-policy-reports")
	})

	t.Run("config is merged over the defaults", func(t *testing.T) {
		before := helmTemplate(t, "", reportsHA)
		after := helmTemplate(t, "", release{reportsHA.name, reportsHA.namespace, append(slices.Clone(reportsHA.args),
			"--set", "config.processors.memory_limiter.limit_percentage=70",
			"--set", "config.exporters.otlp_http.compression=zstd")})
		want := renderedConfig(t, before, "otelcol-policy-config")
		limiter := want["processors"].(map[string]any)["memory_limiter"].(map[string]any)
		limiter["limit_percentage"] = float64(70)
		want["exporters"].(map[string]any)["otlp_http"].(map[string]any)["compression"] = "zstd"
		assert.Equal(t, want, renderedConfig(t, after, "otelcol-policy-config"), "only the set keys change")
		// The config's checksum rolls the pods.
		annotation := func(objs []*unstructured.Unstructured) string {
			return typed[appsv1.StatefulSet](t, find(t, objs, "StatefulSet", saNamespace, "otelcol-policy")).Spec.Template.Annotations["checksum/config"]
		}
		assert.NotEmpty(t, annotation(before))
		assert.NotEqual(t, annotation(before), annotation(after))
	})

	t.Run("replicas without leader election are refused", func(t *testing.T) {
		assert.Contains(t, helmTemplateFails(t, "--set", "replicaCount=2"), "replicaCount > 1 needs leaderElection.enabled=true")
	})

	t.Run("daemonset has no API access", func(t *testing.T) {
		objs := helmTemplate(t, "", decisions)
		for _, o := range objs {
			assert.NotContains(t, []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Secret", "PersistentVolumeClaim"}, o.GetKind(), objID(o))
		}
		sa := typed[corev1.ServiceAccount](t, find(t, objs, "ServiceAccount", nodeNS, "otelcol-policy-node"))
		require.NotNil(t, sa.AutomountServiceAccountToken)
		assert.False(t, *sa.AutomountServiceAccountToken)
	})

	t.Run("k8s events", func(t *testing.T) {
		objs := helmTemplate(t, "", release{decisions.name, decisions.namespace, append(slices.Clone(decisions.args), "--set", "k8sEvents.enabled=true")})
		role := typed[struct{ Rules []map[string][]string }](t, find(t, objs, "Role", nodeNS, "otelcol-policy-node-events"))
		assert.Equal(t, []map[string][]string{{"apiGroups": {""}, "resources": {"events"}, "verbs": {"create", "patch"}}}, role.Rules)
		find(t, objs, "RoleBinding", nodeNS, "otelcol-policy-node-events")
		ds := typed[appsv1.DaemonSet](t, find(t, objs, "DaemonSet", nodeNS, "otelcol-policy-node"))
		require.NotNil(t, ds.Spec.Template.Spec.AutomountServiceAccountToken)
		assert.True(t, *ds.Spec.Template.Spec.AutomountServiceAccountToken, "the extension calls the API server")
		env := map[string]string{}
		for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				env[e.Name] = e.ValueFrom.FieldRef.FieldPath
			}
		}
		assert.Equal(t, map[string]string{"K8S_POD_NAME": "metadata.name", "K8S_POD_NAMESPACE": "metadata.namespace",
			"K8S_POD_UID": "metadata.uid"}, env)
		assert.Contains(t, renderedConfig(t, objs, "otelcol-policy-node-config")["extensions"], "k8s_events")
	})

	t.Run("self-metrics scraped by a PodMonitor", func(t *testing.T) {
		for _, rel := range []release{reportsDefault, decisions} {
			objs := helmTemplate(t, "", release{rel.name, rel.namespace, slices.Concat(rel.args, []string{"--set",
				"podMonitor.enabled=true,podMonitor.interval=30s,podMonitor.additionalLabels.release=kube-prometheus-stack"}, metricsFrom)})
			pm := typed[monitor](t, find(t, objs, "PodMonitor", rel.namespace, rel.name))
			tmpl := podTemplate(t, objs)
			pm.check(t, "podMonitorSelector", pm.Spec.PodMetricsEndpoints, tmpl.Labels)
			selector, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
			require.NoError(t, err)
			assert.True(t, selector.Matches(labels.Set(tmpl.Labels)), "the PodMonitor selects the release's pods")
		}
		assert.False(t, slices.ContainsFunc(helmTemplate(t, "", decisions), func(o *unstructured.Unstructured) bool {
			return o.GetKind() == "PodMonitor"
		}), "no PodMonitor by default")
	})

	t.Run("networkPolicy.metricsFrom admits Prometheus to the metrics port", func(t *testing.T) {
		objs := helmTemplate(t, "", release{decisions.name, decisions.namespace, slices.Concat(decisions.args, metricsFrom)})
		np := typed[networkingv1.NetworkPolicy](t, find(t, objs, "NetworkPolicy", nodeNS, "otelcol-policy-node-decisions"))
		require.Len(t, np.Spec.Ingress, 2, "the producers on the OPA port, Prometheus on the metrics ports")
		assert.Equal(t, "opa", np.Spec.Ingress[0].Ports[0].Port.String())
		rule := np.Spec.Ingress[1]
		require.Len(t, rule.Ports, 2)
		assert.Equal(t, "metrics", rule.Ports[0].Port.String())
		assert.Equal(t, "policy-metrics", rule.Ports[1].Port.String())
		require.Len(t, rule.From, 1)
		assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "monitoring"}, rule.From[0].NamespaceSelector.MatchLabels)
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": "prometheus"}, rule.From[0].PodSelector.MatchLabels)
	})

	t.Run("a NetworkPolicy in every mode", func(t *testing.T) {
		deployment := "Deployment " + saNamespace + "/otelcol-policy"
		statefulset := "StatefulSet " + saNamespace + "/otelcol-policy"
		daemonset := "DaemonSet " + nodeNS + "/otelcol-policy-node"
		for _, c := range []struct {
			rel  release
			want map[string][]string
		}{
			{reportsDefault, map[string][]string{deployment: {}}},
			{reportsHA, map[string][]string{statefulset: {}}},
			{decisions, map[string][]string{daemonset: {"opa"}}},
			{monitored(reportsDefault), map[string][]string{deployment: {"metrics"}}},
			{monitored(reportsHA), map[string][]string{statefulset: {"metrics"}}},
			{monitored(decisions), map[string][]string{daemonset: {"opa", "metrics"}}},
			{withArgs(reportsDefault, metricsFrom...), map[string][]string{deployment: {"metrics", "policy-metrics"}}},
			{withArgs(decisions, metricsFrom...), map[string][]string{daemonset: {"opa", "metrics", "policy-metrics"}}},
		} {
			assert.Equal(t, c.want, admittedPorts(t, helmTemplate(t, "", c.rel)), "%v", c.rel.args)
		}
		for _, rel := range []release{reportsDefault, decisions} {
			objs := helmTemplate(t, "", release{rel.name, rel.namespace, slices.Concat(rel.args, []string{"--set", "networkPolicy.enabled=false"})})
			assert.False(t, slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "NetworkPolicy" }))
		}
		// A PodMonitor whose scrapes the policy would refuse is refused.
		for _, mode := range []string{"deployment", "statefulset", "daemonset"} {
			assert.Contains(t, helmTemplateFails(t, "--set", "mode="+mode+",podMonitor.enabled=true", "--set", "leaderElection.enabled=true"),
				"podMonitor.enabled needs networkPolicy.metricsFrom", mode)
		}
	})

	t.Run("images pinned by digest", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
		initDigest := "sha256:" + strings.Repeat("fedcba9876543210", 4)
		for _, rel := range []release{reportsDefault, reportsHA, decisions} {
			objs := helmTemplate(t, "", release{rel.name, rel.namespace, slices.Concat(rel.args, []string{"--set",
				"image.repository=registry.example.com/otelcol-policy,image.tag=" + releaseVersion(t) + ",image.digest=" + digest +
					",decisionLogs.initImage.digest=" + initDigest})})
			n := 0
			for _, o := range objs {
				for _, c := range containers(o) {
					want := "registry.example.com/otelcol-policy@" + digest
					if c["name"] == "prepare-host-dirs" {
						want = "busybox@" + initDigest
					}
					assert.Equal(t, want, c["image"], "%s: container %s", objID(o), c["name"])
					n++
				}
			}
			assert.Positive(t, n)
		}
		for _, bad := range []string{"image.digest=latest", "image.digest=sha256:abc", "decisionLogs.initImage.digest=md5:0123"} {
			assert.Contains(t, helmTemplateFails(t, "--set", bad), "values don't meet the specifications of the schema", bad)
		}
	})

	t.Run("remote write of the policy metrics", func(t *testing.T) {
		for _, rel := range []release{reportsDefault, reportsHA, decisions} {
			objs := helmTemplate(t, "", release{rel.name, rel.namespace, slices.Concat(rel.args, remoteWrite)})
			cfg := renderedConfig(t, objs, rel.name+"-config")
			pipelines := cfg["service"].(map[string]any)["pipelines"].(map[string]any)
			assert.Contains(t, pipelines["logs"].(map[string]any)["exporters"], "policy_metrics")
			assert.Equal(t, map[string]any{"receivers": []any{"policy_metrics"}, "exporters": []any{"prometheus_remote_write"}}, pipelines["metrics"],
				"remote-written, not served too: a Prometheus scraping the pods would hold every series twice")
			prw := cfg["exporters"].(map[string]any)["prometheus_remote_write"].(map[string]any)
			assert.Equal(t, "https://prometheus.example.com/api/v1/write", prw["http"].(map[string]any)["endpoint"])
			// The connector's state next to the state of what feeds it: the PVC (report watcher), the host path.
			storage := "file_storage/shared"
			if rel.name == decisions.name {
				storage = "file_storage"
				// One series per node's collector: the counters of two collectors would collide.
				assert.Equal(t, map[string]any{"k8s_node_name": "${env:K8S_NODE_NAME}"}, prw["external_labels"])
				ds := typed[appsv1.DaemonSet](t, find(t, objs, "DaemonSet", nodeNS, decisions.name))
				assert.True(t, slices.ContainsFunc(ds.Spec.Template.Spec.Containers[0].Env, func(e corev1.EnvVar) bool {
					return e.Name == "K8S_NODE_NAME" && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
				}), "K8S_NODE_NAME from the downward API")
			} else {
				assert.NotContains(t, prw, "external_labels")
			}
			connector := cfg["connectors"].(map[string]any)["policy_metrics"].(map[string]any)
			assert.Equal(t, storage, connector["storage"])
			// With leader election only the leader writes: one writer per series.
			if slices.Equal(rel.args, reportsHA.args) {
				assert.Equal(t, "k8s_leader_elector", connector["k8s_leader_elector"])
			} else {
				assert.NotContains(t, connector, "k8s_leader_elector")
			}
		}
		// The report watcher has it always, its metrics to the OTLP endpoint (and the scrape endpoint).
		for _, c := range []struct {
			rel  release
			want []any
		}{{reportsDefault, []any{"otlp_http", "prometheus"}}, {withArgs(reportsDefault, noScrape...), []any{"otlp_http"}}} {
			pipelines := renderedConfig(t, helmTemplate(t, "", c.rel), "otelcol-policy-config")["service"].(map[string]any)["pipelines"].(map[string]any)
			assert.Equal(t, map[string]any{"receivers": []any{"policy_metrics"}, "exporters": c.want}, pipelines["metrics"], "%v", c.rel.args)
		}
	})

	t.Run("statefulset: a queue claim per replica", func(t *testing.T) {
		objs := helmTemplate(t, "", release{reportsHA.name, reportsHA.namespace, slices.Concat(reportsHA.args, []string{"--set",
			"queue.persistence.size=5Gi,queue.persistence.storageClassName=fast-ssd"})})
		sts := typed[appsv1.StatefulSet](t, find(t, objs, "StatefulSet", saNamespace, "otelcol-policy"))
		require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
		queue := sts.Spec.VolumeClaimTemplates[0]
		assert.Equal(t, "fast-ssd", *queue.Spec.StorageClassName)
		assert.Equal(t, "5Gi", queue.Spec.Resources.Requests.Storage().String())
		// A claim template cannot change: its labels do not carry the chart's or the app's version.
		assert.Equal(t, sts.Spec.Selector.MatchLabels, queue.Labels)
		assert.False(t, slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" }))
	})

	t.Run("rules and dashboards of the chart's files", func(t *testing.T) {
		objs := helmTemplate(t, "", release{reportsDefault.name, reportsDefault.namespace, []string{"--set", "prometheusRule.enabled=true,dashboards.enabled=true"}})
		rules, dashboards := 0, 0
		for _, o := range objs {
			if o.GetKind() == "PrometheusRule" {
				rules++
			}
			if o.GetLabels()["grafana_dashboard"] != "" {
				dashboards++
			}
		}
		// One PrometheusRule when the chart has rule files, one ConfigMap per dashboard file: none while
		// files/ holds only its READMEs.
		assert.Equal(t, min(countFiles(t, filepath.Join(chartDir(t), "files", "rules"), ".yaml"), 1), rules)
		assert.Equal(t, countFiles(t, filepath.Join(chartDir(t), "files", "dashboards"), ".json"), dashboards)
		// The PrometheusRule holds the groups of the rules file that promtool checks (TestAlertRulesCheck).
		groups, _, err := unstructured.NestedSlice(find(t, objs, "PrometheusRule", saNamespace, "otelcol-policy").Object, "spec", "groups")
		require.NoError(t, err)
		shipped, err := json.Marshal(ruleGroups(t))
		require.NoError(t, err)
		rendered, err := json.Marshal(groups)
		require.NoError(t, err)
		assert.JSONEq(t, string(shipped), string(rendered))
	})

	t.Run("rules and dashboards from files", func(t *testing.T) {
		objs := helmTemplate(t, chartWithTestFiles(t), release{reportsDefault.name, reportsDefault.namespace, []string{"--set", "prometheusRule.enabled=true,dashboards.enabled=true"}})
		rule := find(t, objs, "PrometheusRule", saNamespace, "otelcol-policy")
		groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
		require.NoError(t, err)
		var want struct{ Groups []any }
		raw, err := os.ReadFile(filepath.Join("testdata", "helm", "files", "rules", "test-rules.yaml"))
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(raw, &want))
		require.NotEmpty(t, want.Groups)
		assert.Subset(t, groups, want.Groups, "the groups of files/rules/*.yaml")
		cm := typed[corev1.ConfigMap](t, find(t, objs, "ConfigMap", saNamespace, "otelcol-policy-dashboard-test-dashboard"))
		assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
		dashboard, err := os.ReadFile(filepath.Join("testdata", "helm", "files", "dashboards", "test-dashboard.json"))
		require.NoError(t, err)
		assert.JSONEq(t, string(dashboard), cm.Data["test-dashboard.json"])
	})
}

// helmTemplateFails renders the shipped chart with args, requires helm to refuse, and returns what it said.
func helmTemplateFails(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", "x", chartDir(t)}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "helm template %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

func renderedConfig(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	var o *unstructured.Unstructured
	for _, c := range objs {
		if c.GetKind() == "ConfigMap" && c.GetName() == name {
			o = c
		}
	}
	require.NotNil(t, o, "ConfigMap %s", name)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(typed[corev1.ConfigMap](t, o).Data["config.yaml"]), &cfg))
	return cfg
}

func countFiles(t *testing.T, dir, ext string) int {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	require.NoError(t, err)
	return len(matches)
}

// chartWithTestFiles is a copy of the chart with the rule and dashboard files of testdata/helm/files added, so
// that the templates are tested with files whatever the chart ships.
func chartWithTestFiles(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "otelcol-policy")
	require.NoError(t, os.CopyFS(dir, os.DirFS(chartDir(t))))
	// The test files have names of their own: CopyFS does not overwrite.
	require.NoError(t, os.CopyFS(filepath.Join(dir, "files"), os.DirFS(filepath.Join("testdata", "helm", "files"))))
	return dir
}

// TestHelmOnAPIServer applies what the chart renders to a real kube-apiserver with server-side dry-run, in
// namespaces with the Pod Security labels of the kustomize manifests (otelcol-policy: restricted;
// otelcol-policy-node: privileged, warn and audit restricted); the pods the workloads would create are admitted;
// the HA release's RBAC, applied for real, passes the kustomize RBAC test by impersonation.
func TestHelmOnAPIServer(t *testing.T) {
	cluster := apiserver.StartForTest(t)
	crds, err := filepath.Glob(filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "testdata", "crds", "*.yaml"))
	require.NoError(t, err)
	// The Prometheus Operator's PrometheusRule, PodMonitor and ServiceMonitor, minimal (testdata/helm/*-crd.yaml).
	for _, p := range append(crds, filepath.Join("testdata", "helm", "prometheusrule-crd.yaml"), filepath.Join("testdata", "helm", "podmonitor-crd.yaml"),
		filepath.Join("testdata", "helm", "servicemonitor-crd.yaml")) {
		cluster.InstallCRDs(t, p)
	}
	e := newKubeEnv(t, cluster, helmTemplate(t, "", reportsHA))
	for _, o := range kustomize(t, kubernetesDir(t)) {
		if o.GetKind() == "Namespace" {
			require.NoError(t, e.apply(t, o, false), objID(o))
		}
	}

	// The ServiceAccounts for real: a pod's admission looks its account up.
	for _, o := range append(helmTemplate(t, "", reportsHA), helmTemplate(t, "", decisions)...) {
		if o.GetKind() == "ServiceAccount" {
			require.NoError(t, e.apply(t, o, false), objID(o))
		}
	}

	withFiles := []string{"--set", "prometheusRule.enabled=true,dashboards.enabled=true,k8sEvents.enabled=true"}
	monitoredDefault, monitoredDecisions := monitored(reportsDefault), monitored(decisions)
	for name, c := range map[string]struct {
		dir string
		rel release
	}{
		"default":   {"", reportsDefault},
		"HA":        {"", reportsHA},
		"daemonset": {"", decisions},
		"daemonset with k8s events": {"", release{decisions.name, decisions.namespace,
			append(slices.Clone(decisions.args), "--set", "k8sEvents.enabled=true")}},
		"rules, dashboards and k8s events":                        {"", release{reportsHA.name, reportsHA.namespace, append(slices.Clone(reportsHA.args), withFiles...)}},
		"rules and dashboards from files":                         {chartWithTestFiles(t), release{reportsHA.name, reportsHA.namespace, append(slices.Clone(reportsHA.args), withFiles...)}},
		"PodMonitor and remote write":                             {"", monitoredDefault},
		"HA with PodMonitor and remote write":                     {"", monitored(reportsHA)},
		"daemonset with PodMonitor, metricsFrom and remote write": {"", monitoredDecisions},
		"ServiceMonitor":                                          {"", withArgs(reportsDefault, slices.Concat(serviceMonitorArg, metricsFrom)...)},
		"daemonset with ServiceMonitor":                           {"", withArgs(decisions, slices.Concat(serviceMonitorArg, metricsFrom)...)},
		"without the scrape endpoint":                             {"", withArgs(monitoredDecisions, noScrape...)},
	} {
		t.Run(name, func(t *testing.T) {
			objs := helmTemplate(t, c.dir, c.rel)
			e.dryRunApply(t, objs)
			n := 0
			for _, o := range objs {
				if isWorkload(o) {
					for _, claim := range claimsOf(t, o) {
						require.NoError(t, e.dryRunCreate(t, claim), "the claim %s of %s", claim.GetName(), objID(o))
					}
					require.NoError(t, e.dryRunCreate(t, podOf(t, o, c.rel.namespace)), "the pod of %s: Pod Security admits it", objID(o))
					n++
				}
			}
			assert.Equal(t, 1, n, "one workload per release")
		})
	}

	// The HA release's RBAC for real, then the kustomize manifests' RBAC test as its ServiceAccount.
	for _, o := range e.objs {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			require.NoError(t, e.apply(t, o, false), objID(o))
		}
	}
	t.Run("RBAC", func(t *testing.T) { testRBAC(t, e) })
}

// TestHelmConfigsValidate: the configs the chart renders (report watcher without and with HA, decision
// receiver, each with the metrics remote-written) pass `otelcol-policy validate` with the pods' environment,
// write only to mounted volumes and serve the self-metrics on the metrics port.
func TestHelmConfigsValidate(t *testing.T) {
	for name, rels := range map[string][]release{
		"default":                     {reportsDefault, decisions},
		"HA":                          {reportsHA, decisions},
		"remote write":                {monitored(reportsDefault), monitored(decisions)},
		"HA with remote write":        {monitored(reportsHA), monitored(decisions)},
		"without the scrape endpoint": {withArgs(reportsHA, noScrape...), withArgs(monitored(decisions), noScrape...)},
	} {
		t.Run(name, func(t *testing.T) {
			validateWorkloadConfigs(t, append(helmTemplate(t, "", rels[0]), helmTemplate(t, "", rels[1])...))
		})
	}
}

// downJobRegexp is the job matcher of the shipped OtelcolPolicyDown alert.
func downJobRegexp(t *testing.T) string {
	t.Helper()
	for _, g := range ruleGroups(t) {
		for _, r := range g["rules"].([]any) {
			if rule := r.(map[string]any); rule["alert"] == "OtelcolPolicyDown" {
				m := regexp.MustCompile(`job=~"([^"]+)"`).FindStringSubmatch(rule["expr"].(string))
				require.NotNil(t, m, "OtelcolPolicyDown matches a job: %s", rule["expr"])
				return m[1]
			}
		}
	}
	t.Fatal("no OtelcolPolicyDown rule")
	return ""
}
