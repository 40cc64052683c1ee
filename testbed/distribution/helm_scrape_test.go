// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// The chart's values for policy_metrics' scrape endpoint (the prometheus exporter on port policy-metrics).
var (
	noScrape          = []string{"--set", "prometheusScrape.enabled=false"}
	scrape            = []string{"--set", "prometheusScrape.enabled=true"}
	serviceMonitorArg = []string{"--set", "serviceMonitor.enabled=true"}
)

// podTemplate is the pod template of the release's one workload.
func podTemplate(t *testing.T, objs []*unstructured.Unstructured) corev1.PodTemplateSpec {
	t.Helper()
	for _, o := range objs {
		if isWorkload(o) {
			return typed[struct {
				Spec struct{ Template corev1.PodTemplateSpec }
			}](t, o).Spec.Template
		}
	}
	t.Fatal("no workload")
	return corev1.PodTemplateSpec{}
}

// containerPorts are the collector container's ports by name.
func containerPorts(tmpl corev1.PodTemplateSpec) map[string]int32 {
	out := map[string]int32{}
	for _, p := range tmpl.Spec.Containers[len(tmpl.Spec.Containers)-1].Ports {
		out[p.Name] = p.ContainerPort
	}
	return out
}

// monitor is what the tests read of a PodMonitor or a ServiceMonitor.
type monitor struct {
	Metadata metav1.ObjectMeta
	Spec     struct {
		JobLabel            string
		Selector            metav1.LabelSelector
		PodMetricsEndpoints []map[string]any // PodMonitor
		Endpoints           []map[string]any // ServiceMonitor
	}
}

// check: the monitor, rendered with interval 30s and additionalLabels release=kube-prometheus-stack, has that
// label (what the Prometheus' selector matches), scrapes both metrics ports (endpoints), and its job, the label
// jobLabel names on what it selects (targetLabels: the pods' or the Service's), is one OtelcolPolicyDown matches.
func (m *monitor) check(t *testing.T, selector string, endpoints []map[string]any, targetLabels map[string]string) {
	t.Helper()
	assert.Equal(t, "kube-prometheus-stack", m.Metadata.Labels["release"], "what the Prometheus' %s matches", selector)
	assert.Equal(t, []map[string]any{{"port": "metrics", "path": "/metrics", "interval": "30s"},
		{"port": "policy-metrics", "path": "/metrics", "interval": "30s"}}, endpoints)
	job := targetLabels[m.Spec.JobLabel]
	require.NotEmpty(t, job, "the scraped objects have the label %q", m.Spec.JobLabel)
	assert.Regexp(t, "^(?:"+downJobRegexp(t)+")$", job, "OtelcolPolicyDown's job matcher matches the monitor's job")
}

// TestHelmPrometheusScrape: prometheusScrape (on by default, unless the series are remote-written) serves
// policy_metrics' series in every mode with the names and labels of the remote write, on the port policy-metrics
// that the NetworkPolicy opens to metricsFrom and the PodMonitor or ServiceMonitor scrapes; off, none of it is
// rendered.
func TestHelmPrometheusScrape(t *testing.T) {
	t.Run("on by default in every mode, named as the remote write", func(t *testing.T) {
		for _, rel := range []release{reportsDefault, reportsHA, decisions} {
			objs := helmTemplate(t, "", withArgs(rel, slices.Concat(remoteWrite, scrape)...))
			cfg := renderedConfig(t, objs, rel.name+"-config")
			exporters := cfg["exporters"].(map[string]any)
			scrape := exporters["prometheus"].(map[string]any)
			assert.Equal(t, "0.0.0.0:9464", scrape["endpoint"], rel.name)
			assert.Equal(t, "90s", scrape["metric_expiration"], "a replica that stopped leading serves its series briefly")
			// What makes the names and labels those of the remote write, which the dashboards are written against.
			prw := exporters["prometheus_remote_write"].(map[string]any)
			for _, key := range []string{"resource_constant_labels", "translation_strategy"} {
				require.Contains(t, scrape, key)
				assert.Equal(t, prw[key], scrape[key], "%s: %s as prometheus_remote_write's", rel.name, key)
			}
			pipelines := cfg["service"].(map[string]any)["pipelines"].(map[string]any)
			assert.Contains(t, pipelines["metrics"].(map[string]any)["exporters"], "prometheus")
			assert.Contains(t, pipelines["logs"].(map[string]any)["exporters"], "policy_metrics")
			assert.Equal(t, int32(9464), containerPorts(podTemplate(t, objs))["policy-metrics"])
		}
		// The decision receiver gets policy_metrics for it, its decision sums served by each pod.
		cfg := renderedConfig(t, helmTemplate(t, "", decisions), "otelcol-policy-node-config")
		pipelines := cfg["service"].(map[string]any)["pipelines"].(map[string]any)
		assert.Equal(t, map[string]any{"receivers": []any{"policy_metrics"}, "exporters": []any{"prometheus"}}, pipelines["metrics"])
		ds := typed[appsv1.DaemonSet](t, find(t, helmTemplate(t, "", decisions), "DaemonSet", nodeNS, decisions.name))
		assert.False(t, slices.ContainsFunc(ds.Spec.Template.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "K8S_NODE_NAME" }),
			"scraped series tell the nodes apart by instance: no k8s_node_name label")
	})

	t.Run("off", func(t *testing.T) {
		for _, rel := range []release{reportsDefault, decisions} {
			// Off by remote write (the default with an endpoint), or by the value.
			objs := helmTemplate(t, "", monitored(rel))
			assert.Equal(t, renderedConfig(t, objs, rel.name+"-config"), renderedConfig(t, helmTemplate(t, "", withArgs(monitored(rel), noScrape...)), rel.name+"-config"))
			cfg := renderedConfig(t, objs, rel.name+"-config")
			assert.NotContains(t, cfg["exporters"], "prometheus")
			assert.NotContains(t, containerPorts(podTemplate(t, objs)), "policy-metrics")
			pm := typed[struct {
				Spec struct{ PodMetricsEndpoints []map[string]any }
			}](t, find(t, objs, "PodMonitor", rel.namespace, rel.name))
			assert.Equal(t, []map[string]any{{"port": "metrics", "path": "/metrics"}}, pm.Spec.PodMetricsEndpoints)
		}
		assert.Equal(t, map[string][]string{"DaemonSet " + nodeNS + "/otelcol-policy-node": {"opa", "metrics"}},
			admittedPorts(t, helmTemplate(t, "", withArgs(decisions, slices.Concat(metricsFrom, noScrape)...))))
		assert.NotContains(t, renderedConfig(t, helmTemplate(t, "", withArgs(decisions, noScrape...)), "otelcol-policy-node-config"), "connectors",
			"the decision receiver has no policy_metrics without remote write or the scrape endpoint")
	})

	t.Run("ServiceMonitor", func(t *testing.T) {
		for _, rel := range []release{reportsDefault, decisions} {
			objs := helmTemplate(t, "", withArgs(rel, slices.Concat(serviceMonitorArg, metricsFrom, []string{"--set",
				"serviceMonitor.interval=30s,serviceMonitor.additionalLabels.release=kube-prometheus-stack"})...))
			tmpl := podTemplate(t, objs)
			svc := typed[corev1.Service](t, find(t, objs, "Service", rel.namespace, rel.name+"-metrics"))
			assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "headless: Prometheus scrapes every pod")
			assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(tmpl.Labels)), "the Service selects the release's pods")
			ports := containerPorts(tmpl)
			var named []string
			for _, p := range svc.Spec.Ports {
				named = append(named, p.Name)
				assert.Equal(t, p.Name, p.TargetPort.String(), "the Service's port %s is the container port of that name", p.Name)
				assert.Equal(t, ports[p.Name], p.Port)
			}
			assert.Equal(t, []string{"metrics", "policy-metrics"}, named)

			sm := typed[monitor](t, find(t, objs, "ServiceMonitor", rel.namespace, rel.name))
			sm.check(t, "serviceMonitorSelector", sm.Spec.Endpoints, svc.Labels)
			selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			require.NoError(t, err)
			for _, o := range objs {
				if o.GetKind() == "Service" {
					assert.Equal(t, o.GetName() == rel.name+"-metrics", selector.Matches(labels.Set(o.GetLabels())),
						"the ServiceMonitor selects the metrics Service only: %s", o.GetName())
				}
			}
			// The NetworkPolicy admits metricsFrom to both ports.
			npName := rel.name + "-reports"
			if rel.name == decisions.name {
				npName = rel.name + "-decisions"
			}
			np := typed[networkingv1.NetworkPolicy](t, find(t, objs, "NetworkPolicy", rel.namespace, npName))
			rule := np.Spec.Ingress[len(np.Spec.Ingress)-1]
			require.Len(t, rule.Ports, 2)
			assert.Equal(t, []string{"metrics", "policy-metrics"}, []string{rule.Ports[0].Port.String(), rule.Ports[1].Port.String()})
		}
		assert.False(t, slices.ContainsFunc(helmTemplate(t, "", reportsDefault), func(o *unstructured.Unstructured) bool {
			return o.GetKind() == "ServiceMonitor" || o.GetName() == reportsDefault.name+"-metrics"
		}), "no ServiceMonitor, no metrics Service by default")
	})

	t.Run("refused", func(t *testing.T) {
		for _, mode := range []string{"deployment", "daemonset"} {
			assert.Contains(t, helmTemplateFails(t, "--set", "mode="+mode+",serviceMonitor.enabled=true"),
				"serviceMonitor.enabled needs networkPolicy.metricsFrom", mode)
			assert.Contains(t, helmTemplateFails(t, slices.Concat([]string{"--set", "mode=" + mode + ",serviceMonitor.enabled=true,podMonitor.enabled=true"}, metricsFrom)...),
				"podMonitor.enabled and serviceMonitor.enabled: pick one", mode)
		}
	})
}
