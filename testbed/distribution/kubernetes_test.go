// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"
)

// The manifests under kubernetes/ are built with a minimal kustomize: go.mod has no kustomize library
// (sigs.k8s.io/kustomize/api would add modules and upgrade others). It follows `resources:` (files and
// directories) and applies `images:`, the only features the manifests use; any other kustomization key fails the
// test rather than being ignored. When kubectl is installed, TestKubernetesKustomizeMatchesKubectl compares the
// result with `kubectl kustomize`.

const (
	saNamespace  = "otelcol-policy"
	saName       = "otelcol-policy"
	nodeNS       = "otelcol-policy-node"
	leaseName    = "otelcol-policy-reports"
	imageName    = "otelcol-policy"
	configDir    = "/etc/otelcol-policy"
	binaryInPath = "/otelcol-policy"
)

func kubernetesDir(t *testing.T) string {
	return filepath.Join(collectortest.RepoRoot(t), "distributions", "otelcol-policy", "kubernetes")
}

type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
		Digest  string `json:"digest"`
	} `json:"images"`
}

// kustomize builds the kustomization in dir.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, yaml.UnmarshalStrict(raw, &k), "%s uses a kustomize feature this test does not implement", dir)
	require.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
	require.Equal(t, "Kustomization", k.Kind)
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		path := filepath.Join(dir, r)
		st, err := os.Stat(path)
		require.NoError(t, err, "resource %s of %s", r, dir)
		if st.IsDir() {
			objs = append(objs, kustomize(t, path)...)
		} else {
			objs = append(objs, apiserver.Objects(t, path)...)
		}
	}
	for _, img := range k.Images {
		for _, o := range objs {
			for _, c := range containers(o) {
				ref, _ := c["image"].(string)
				name, tag, digest := splitImage(ref)
				if name != img.Name {
					continue
				}
				if img.NewName != "" {
					name = img.NewName
				}
				if img.NewTag != "" {
					tag, digest = img.NewTag, ""
				}
				if img.Digest != "" {
					tag, digest = "", img.Digest
				}
				ref = name
				if tag != "" {
					ref += ":" + tag
				}
				if digest != "" {
					ref += "@" + digest
				}
				c["image"] = ref
			}
		}
	}
	// Object identities are unique, as kustomize requires.
	seen := map[string]bool{}
	for _, o := range objs {
		id := objID(o)
		require.False(t, seen[id], "%s appears twice", id)
		seen[id] = true
	}
	return objs
}

func splitImage(ref string) (name, tag, digest string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref, digest = ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref, tag = ref[:i], ref[i+1:]
	}
	return ref, tag, digest
}

func objID(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// podSpec is the pod spec of a Pod or a workload's pod template (the live map, for editing), else nil.
func podSpec(o *unstructured.Unstructured) map[string]any {
	path := []string{"spec", "template", "spec"}
	if o.GetKind() == "Pod" {
		path = []string{"spec"}
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	m, _ := spec.(map[string]any)
	return m
}

// containers are the containers and init containers of o's pod spec (live maps).
func containers(o *unstructured.Unstructured) []map[string]any {
	spec := podSpec(o)
	if spec == nil {
		return nil
	}
	var out []map[string]any
	for _, key := range []string{"initContainers", "containers"} {
		list, _ := spec[key].([]any)
		for _, c := range list {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	b, err := json.Marshal(o.Object)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &v), objID(o))
	return &v
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s in the manifests", kind, namespace, name)
	return nil
}

// receiverKind is a report kind of receiver/k8sreportsreceiver/kinds.go.
type receiverKind struct {
	group, version string
	resources      []string // nil: every resource of the group/version
}

// receiverKinds reads the report kinds from the receiver's source, so that the RBAC cannot drift from what the
// receiver watches.
func receiverKinds(t *testing.T) []receiverKind {
	t.Helper()
	path := filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "kinds.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	str := func(e ast.Expr) string {
		lit, ok := e.(*ast.BasicLit)
		require.True(t, ok && lit.Kind == token.STRING, "kinds.go: expected a string literal")
		s, err := strconv.Unquote(lit.Value)
		require.NoError(t, err)
		return s
	}
	var out []receiverKind
	ast.Inspect(f, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if id, ok := cl.Type.(*ast.Ident); !ok || id.Name != "reportKind" || len(cl.Elts) == 0 {
			return true
		}
		require.Len(t, cl.Elts, 4, "kinds.go: reportKind{name, groupVersion, resources, parse}")
		var k receiverKind
		for _, e := range cl.Elts[1].(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			switch kv.Key.(*ast.Ident).Name {
			case "Group":
				k.group = str(kv.Value)
			case "Version":
				k.version = str(kv.Value)
			}
		}
		switch r := cl.Elts[2].(type) {
		case *ast.Ident:
			require.Equal(t, "nil", r.Name)
		case *ast.CompositeLit:
			for _, e := range r.Elts {
				k.resources = append(k.resources, str(e))
			}
		default:
			t.Fatalf("kinds.go: unexpected resources expression %T", r)
		}
		out = append(out, k)
		return false
	})
	require.GreaterOrEqual(t, len(out), 8, "kinds.go: report kinds not found")
	return out
}

// TestKubernetesManifestsBuild: the kustomization builds into the objects the README describes, with the RBAC
// the receiver's kinds need and nothing more.
func TestKubernetesManifestsBuild(t *testing.T) {
	objs := kustomize(t, kubernetesDir(t))
	var ids []string
	for _, o := range objs {
		ids = append(ids, objID(o))
	}
	assert.ElementsMatch(t, []string{
		"Namespace /otelcol-policy", "ServiceAccount otelcol-policy/otelcol-policy",
		"ClusterRole /otelcol-policy-reports", "ClusterRoleBinding /otelcol-policy-reports",
		"Role otelcol-policy/otelcol-policy-leader-election", "RoleBinding otelcol-policy/otelcol-policy-leader-election",
		"Role otelcol-policy/otelcol-policy-events", "RoleBinding otelcol-policy/otelcol-policy-events",
		"ConfigMap otelcol-policy/otelcol-policy-settings", "ConfigMap otelcol-policy/otelcol-policy-config",
		"PersistentVolumeClaim otelcol-policy/otelcol-policy-state", "StatefulSet otelcol-policy/otelcol-policy",
		"Namespace /otelcol-policy-node", "ServiceAccount otelcol-policy-node/otelcol-policy-node",
		"ConfigMap otelcol-policy-node/otelcol-policy-settings", "ConfigMap otelcol-policy-node/otelcol-policy-node-config",
		"DaemonSet otelcol-policy-node/otelcol-policy-node", "Service otelcol-policy-node/otelcol-policy-decisions",
		"NetworkPolicy otelcol-policy-node/otelcol-policy-decisions", "NetworkPolicy otelcol-policy/otelcol-policy-reports",
	}, ids)

	// The ClusterRole grants get/list/watch on exactly the receiver's report resources.
	role := typed[struct {
		Rules []struct {
			APIGroups, Resources, Verbs, ResourceNames, NonResourceURLs []string
		}
	}](t, find(t, objs, "ClusterRole", "", "otelcol-policy-reports"))
	granted := map[string][]string{}
	for _, r := range role.Rules {
		assert.Equal(t, []string{"get", "list", "watch"}, r.Verbs)
		assert.Empty(t, r.ResourceNames)
		assert.Empty(t, r.NonResourceURLs)
		for _, g := range r.APIGroups {
			granted[g] = append(granted[g], r.Resources...)
		}
	}
	want := map[string][]string{}
	for _, k := range receiverKinds(t) {
		if k.resources == nil {
			want[k.group] = append(want[k.group], "*")
		}
		want[k.group] = append(want[k.group], k.resources...)
	}
	for g := range want {
		sort.Strings(want[g])
		sort.Strings(granted[g])
	}
	assert.Equal(t, want, granted, "ClusterRole otelcol-policy-reports vs receiver/k8sreportsreceiver/kinds.go")
	assert.NotContains(t, granted, "apiextensions.k8s.io", "the receiver uses discovery, not CRDs")

	// Leader election: one Role in the lease's namespace.
	leRole := typed[struct{ Rules []map[string][]string }](t, find(t, objs, "Role", saNamespace, "otelcol-policy-leader-election"))
	assert.Equal(t, []map[string][]string{
		{"apiGroups": {"coordination.k8s.io"}, "resources": {"leases"}, "verbs": {"create"}},
		{"apiGroups": {"coordination.k8s.io"}, "resources": {"leases"}, "resourceNames": {leaseName}, "verbs": {"get", "update"}},
	}, leRole.Rules)

	// Every image of ours is the one the root kustomization sets; the StatefulSet runs 2 replicas.
	for _, o := range objs {
		for _, c := range containers(o) {
			if name, tag, _ := splitImage(c["image"].(string)); name == imageName {
				assert.Equal(t, releaseVersion(t), tag, "%s: the root kustomization's images: newTag", objID(o))
			}
		}
	}
	sts := typed[appsv1.StatefulSet](t, find(t, objs, "StatefulSet", saNamespace, "otelcol-policy"))
	assert.Equal(t, int32(2), *sts.Spec.Replicas)
	pvc := typed[corev1.PersistentVolumeClaim](t, find(t, objs, "PersistentVolumeClaim", saNamespace, "otelcol-policy-state"))
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, pvc.Spec.AccessModes, "the state, shared")
	// The queue: a claim per replica, mounted where file_storage/queue writes.
	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	queue := sts.Spec.VolumeClaimTemplates[0]
	assert.Equal(t, "queue", queue.Name)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, queue.Spec.AccessModes, "the queue, one pod's")
	assert.Contains(t, sts.Spec.Template.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "queue", MountPath: "/var/lib/otelcol-policy/queue"})
	svc := typed[corev1.Service](t, find(t, objs, "Service", nodeNS, "otelcol-policy-decisions"))
	require.NotNil(t, svc.Spec.InternalTrafficPolicy)
	assert.Equal(t, corev1.ServiceInternalTrafficPolicyLocal, *svc.Spec.InternalTrafficPolicy)
	assert.Equal(t, int32(8182), svc.Spec.Ports[0].Port)
}

// TestKubernetesDaemonSetIsClosed: the DaemonSet's OPA endpoint listens on every address of the node, so it is
// closed by default twice: the receiver requires the bearer token of a Secret the manifests do not ship (each
// cluster makes its own; the pod does not start without it), and a NetworkPolicy admits only pods labelled as
// decision producers, on the OPA port only. testbed/hostile runs the config and checks the 401s.
func TestKubernetesDaemonSetIsClosed(t *testing.T) {
	objs := kustomize(t, kubernetesDir(t))
	for _, o := range objs {
		assert.NotEqual(t, "Secret", o.GetKind(), "%s: no secret is shipped", objID(o))
	}
	var config string
	for _, wc := range workloadConfigs(t, objs) {
		if wc.workload.GetKind() != "DaemonSet" {
			continue
		}
		config = wc.config
		var cfg struct {
			Extensions map[string]map[string]any
			Receivers  struct {
				DecisionLogs struct {
					OPA struct {
						Endpoint string
						Auth     struct{ Authenticator string }
					}
				} `json:"decision_logs"`
			}
			Service struct{ Extensions []string }
		}
		require.NoError(t, yaml.Unmarshal([]byte(config), &cfg))
		opa := cfg.Receivers.DecisionLogs.OPA
		assert.Equal(t, "0.0.0.0:8182", opa.Endpoint)
		auth := opa.Auth.Authenticator
		require.Equal(t, "bearertokenauth/opa", auth, "the OPA endpoint requires a token")
		assert.Contains(t, cfg.Service.Extensions, auth)
		tokenFile, _ := cfg.Extensions[auth]["filename"].(string)
		require.NotEmpty(t, tokenFile, "the token comes from a file, not the config")
		assert.Empty(t, cfg.Extensions[auth]["token"])
		assert.Equal(t, true, cfg.Extensions[auth]["wait_for_token_file"], "no start without the token")

		// The token file is the key "token" of the Secret otelcol-policy-opa-token, read-only, not optional.
		m, ok := wc.mounts[filepath.Dir(tokenFile)]
		require.True(t, ok, "%s is mounted", filepath.Dir(tokenFile))
		assert.True(t, m.ReadOnly)
		vol := wc.volumes[m.Name]
		require.NotNil(t, vol.Secret, "%s is a Secret volume", m.Name)
		assert.Equal(t, "otelcol-policy-opa-token", vol.Secret.SecretName)
		assert.True(t, vol.Secret.Optional == nil || !*vol.Secret.Optional, "the Secret is required")
		require.Len(t, vol.Secret.Items, 1)
		assert.Equal(t, corev1.KeyToPath{Key: "token", Path: filepath.Base(tokenFile)}, vol.Secret.Items[0])
	}
	require.NotEmpty(t, config, "the DaemonSet's config")

	np := typed[networkingv1.NetworkPolicy](t, find(t, objs, "NetworkPolicy", nodeNS, "otelcol-policy-decisions"))
	ds := typed[appsv1.DaemonSet](t, find(t, objs, "DaemonSet", nodeNS, "otelcol-policy-node"))
	assert.Equal(t, ds.Spec.Selector.MatchLabels, np.Spec.PodSelector.MatchLabels, "the policy selects the DaemonSet's pods")
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Ingress, 1, "one rule: the producers, on the OPA port")
	rule := np.Spec.Ingress[0]
	require.Len(t, rule.Ports, 1)
	assert.Equal(t, "opa", rule.Ports[0].Port.String())
	require.Len(t, rule.From, 1)
	require.NotNil(t, rule.From[0].PodSelector)
	assert.Equal(t, map[string]string{"otelcol-policy/decision-logs": "allowed"}, rule.From[0].PodSelector.MatchLabels)
	assert.Empty(t, rule.From[0].IPBlock)
}

// admittedPorts checks that one NetworkPolicy of objs, in the namespace of each workload, selects the workload's
// pods and closes their ingress but for rules that each name their peers and ports, every port one the pods serve;
// it returns, by workload, the ports some peer may reach. A workload no policy selects fails the test.
func admittedPorts(t *testing.T, objs []*unstructured.Unstructured) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, w := range objs {
		if !isWorkload(w) {
			continue
		}
		tmpl := typed[struct {
			Spec struct{ Template corev1.PodTemplateSpec }
		}](t, w).Spec.Template
		served := map[string]bool{}
		for _, c := range tmpl.Spec.Containers {
			for _, p := range c.Ports {
				served[p.Name] = true
			}
		}
		var policies []*networkingv1.NetworkPolicy
		for _, o := range objs {
			if o.GetKind() != "NetworkPolicy" || o.GetNamespace() != w.GetNamespace() {
				continue
			}
			np := typed[networkingv1.NetworkPolicy](t, o)
			selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			require.NoError(t, err)
			if selector.Matches(labels.Set(tmpl.Labels)) {
				policies = append(policies, np)
			}
		}
		require.Len(t, policies, 1, "%s: one NetworkPolicy selects its pods", objID(w))
		np := policies[0]
		assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes, objID(w))
		ports := []string{}
		for _, rule := range np.Spec.Ingress {
			require.NotEmpty(t, rule.From, "%s: a rule without peers admits every peer", objID(w))
			require.NotEmpty(t, rule.Ports, "%s: a rule without ports admits every port", objID(w))
			for _, p := range rule.Ports {
				assert.True(t, served[p.Port.String()], "%s: port %s is one its pods serve", objID(w), p.Port)
				ports = append(ports, p.Port.String())
			}
		}
		out[objID(w)] = ports
	}
	return out
}

// TestKubernetesNetworkPolicies: ingress to every workload's pods is closed but for what it needs: the report
// watcher none (the kubelet's probes come from the node, which NetworkPolicy always admits), the decision
// receiver the OPA port.
func TestKubernetesNetworkPolicies(t *testing.T) {
	assert.Equal(t, map[string][]string{
		"StatefulSet otelcol-policy/otelcol-policy":         {},
		"DaemonSet otelcol-policy-node/otelcol-policy-node": {"opa"},
	}, admittedPorts(t, kustomize(t, kubernetesDir(t))))
}

// TestKubernetesKustomizeMatchesKubectl compares the minimal kustomize with the real one, when kubectl is there.
func TestKubernetesKustomizeMatchesKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	out, err := exec.Command(kubectl, "kustomize", kubernetesDir(t)).Output()
	require.NoError(t, err)
	var theirs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		b, err := json.Marshal(m)
		require.NoError(t, err)
		theirs = append(theirs, string(b))
	}
	var ours []string
	for _, o := range kustomize(t, kubernetesDir(t)) {
		b, err := json.Marshal(o.Object)
		require.NoError(t, err)
		ours = append(ours, string(b))
	}
	assert.ElementsMatch(t, theirs, ours)
}

// warnings collects the API server's warning headers (Pod Security "warn" mode answers with them).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// kubeEnv is a real API server with the test CRDs installed and the manifests' Namespaces, ServiceAccounts and
// RBAC applied for real.
type kubeEnv struct {
	cluster *apiserver.Cluster
	objs    []*unstructured.Unstructured
	dc      dynamic.Interface
	cs      kubernetes.Interface
	mapper  meta.RESTMapper
	warn    *warnings
}

// newKubeEnv is the clients of the cluster for objs, as the admin, with the API server's warnings collected.
func newKubeEnv(t *testing.T, cluster *apiserver.Cluster, objs []*unstructured.Unstructured) *kubeEnv {
	t.Helper()
	e := &kubeEnv{cluster: cluster, objs: objs, warn: &warnings{}}
	cfg := cluster.Config(apiserver.AdminToken)
	cfg.WarningHandler = e.warn
	var err error
	e.dc, err = dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	e.cs, err = kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	groups, err := restmapper.GetAPIGroupResources(e.cs.Discovery())
	require.NoError(t, err)
	e.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	return e
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *kubeEnv) gvr(t *testing.T, o *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err, objID(o))
	return m.Resource
}

func (e *kubeEnv) apply(t *testing.T, o *unstructured.Unstructured, dryRun bool) error {
	t.Helper()
	opts := metav1.ApplyOptions{FieldManager: "kubernetes-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := e.dc.Resource(e.gvr(t, o)).Namespace(o.GetNamespace()).Apply(ctxFor(t), o.GetName(), o, opts)
	return err
}

func startKubeEnv(t *testing.T) *kubeEnv {
	t.Helper()
	cluster := apiserver.StartForTest(t)
	crds, err := filepath.Glob(filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "testdata", "crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, crds)
	for _, p := range crds {
		cluster.InstallCRDs(t, p)
	}
	e := newKubeEnv(t, cluster, kustomize(t, kubernetesDir(t)))

	// The Namespaces for real, then every object with server-side dry-run.
	for _, o := range e.objs {
		if o.GetKind() == "Namespace" {
			require.NoError(t, e.apply(t, o, false), objID(o))
		}
	}
	e.dryRunApply(t, e.objs)
	// Real: the identities and RBAC.
	for _, o := range e.objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			require.NoError(t, e.apply(t, o, false), objID(o))
		}
	}
	return e
}

// dryRunApply applies every object with server-side dry-run; Pod Security warns about nothing but the
// DaemonSet's documented exceptions.
func (e *kubeEnv) dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	e.warn.take()
	for _, o := range objs {
		require.NoError(t, e.apply(t, o, true), "server-side dry-run apply of %s", objID(o))
		w := e.warn.take()
		switch o.GetKind() {
		case "DaemonSet":
			// Pod Security warns (namespace label warn=restricted) about exactly the documented exceptions: the
			// host paths and the root init container that prepares them.
			require.Len(t, w, 1, "%s: %v", objID(o), w)
			assert.Contains(t, w[0], `would violate PodSecurity "restricted:latest"`)
			assert.Contains(t, w[0], `restricted volume types (volumes "socket-dir", "queue" use restricted volume type "hostPath")`)
			for _, m := range regexp.MustCompile(`containers? ((?:"[^"]+"(?:, | and )?)+)`).FindAllStringSubmatch(w[0], -1) {
				assert.Equal(t, `"prepare-host-dirs"`, m[1], "only the init container deviates from restricted: %s", w[0])
			}
		default:
			assert.Empty(t, w, "%s: API server warnings", objID(o))
		}
	}
}

// podOf is a Pod made of a workload's pod template, as its controller would create it: a StatefulSet's first
// replica mounts the claims of its volumeClaimTemplates (claimsOf).
func podOf(t *testing.T, w *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	t.Helper()
	tmpl, ok, err := unstructured.NestedMap(w.Object, "spec", "template")
	require.NoError(t, err)
	require.True(t, ok)
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": tmpl["metadata"], "spec": tmpl["spec"],
	}}
	pod.SetName(w.GetName() + "-pod")
	if w.GetKind() == "StatefulSet" {
		pod.SetName(w.GetName() + "-0")
		spec := pod.Object["spec"].(map[string]any)
		volumes, _ := spec["volumes"].([]any)
		for _, c := range claimsOf(t, w)[:1] {
			name := strings.TrimSuffix(c.GetName(), "-"+w.GetName()+"-0")
			volumes = append(volumes, map[string]any{"name": name, "persistentVolumeClaim": map[string]any{"claimName": c.GetName()}})
		}
		spec["volumes"] = volumes
	}
	pod.SetNamespace(namespace)
	return pod
}

// claimsOf are the PersistentVolumeClaims a StatefulSet's controller creates from its volumeClaimTemplates for
// its first replica, <template>-<statefulset>-0, in its namespace.
func claimsOf(t *testing.T, sts *unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	templates, _, err := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	require.NoError(t, err)
	var out []*unstructured.Unstructured
	for _, tmpl := range templates {
		c := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(tmpl.(map[string]any))}
		c.SetAPIVersion("v1")
		c.SetKind("PersistentVolumeClaim")
		c.SetName(c.GetName() + "-" + sts.GetName() + "-0")
		c.SetNamespace(sts.GetNamespace())
		out = append(out, c)
	}
	return out
}

func (e *kubeEnv) dryRunCreate(t *testing.T, o *unstructured.Unstructured) error {
	_, err := e.dc.Resource(e.gvr(t, o)).Namespace(o.GetNamespace()).Create(ctxFor(t), o,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// TestKubernetesManifestsOnAPIServer runs the manifests against a real kube-apiserver: every object passes a
// server-side dry-run apply, Pod Security admission admits the pods (and rejects violations, which shows it is
// enforcing), and the ServiceAccount can do what the collector needs and nothing else.
func TestKubernetesManifestsOnAPIServer(t *testing.T) {
	start := time.Now()
	e := startKubeEnv(t)
	t.Logf("API server up, CRDs installed, every object dry-run applied in %s", time.Since(start).Round(time.Millisecond))

	t.Run("PodSecurity", func(t *testing.T) {
		dep := find(t, e.objs, "StatefulSet", saNamespace, "otelcol-policy")
		ds := find(t, e.objs, "DaemonSet", nodeNS, "otelcol-policy-node")

		// Enforce mode applies to Pods (workloads only get warnings), so the pods their controllers would create
		// are dry-run created, with the StatefulSet's claims.
		for _, c := range claimsOf(t, dep) {
			require.NoError(t, e.dryRunCreate(t, c), "the StatefulSet's claim %s", c.GetName())
		}
		require.NoError(t, e.dryRunCreate(t, podOf(t, dep, saNamespace)), "the StatefulSet's pod in the restricted namespace")
		require.NoError(t, e.dryRunCreate(t, podOf(t, ds, nodeNS)), "the DaemonSet's pod in its privileged namespace")

		// Controls: enforcement is on and would catch a regression.
		bad := podOf(t, dep, saNamespace)
		containers(bad)[0]["securityContext"].(map[string]any)["allowPrivilegeEscalation"] = true
		err := e.dryRunCreate(t, bad)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Contains(t, err.Error(), `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`)

		misplaced := podOf(t, ds, saNamespace)
		podSpec(misplaced)["serviceAccountName"] = saName
		err = e.dryRunCreate(t, misplaced)
		require.True(t, apierrors.IsForbidden(err), "the DaemonSet's pod needs its privileged namespace: %v", err)
		assert.Contains(t, err.Error(), `use restricted volume type "hostPath"`)
	})

	t.Run("RBAC", func(t *testing.T) { testRBAC(t, e) })
}

// downwardExample is what the downward API gives for each field the manifests use.
var downwardExample = map[string]string{
	"metadata.name": "otelcol-policy-7d9f8-abcde", "metadata.namespace": saNamespace,
	"metadata.uid": "0b7f7c1e-6a52-4c1e-9f35-1d2a4b6c8e01", "spec.nodeName": "node-1",
}

func isForbidden(t *testing.T, err error, what string) {
	t.Helper()
	assert.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
}

func testRBAC(t *testing.T, e *kubeEnv) {
	// The collector's identity, as the API server sees a pod's ServiceAccount token.
	cfg := e.cluster.Config(apiserver.AdminToken)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + saNamespace + ":" + saName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
	}
	sa, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	saCS, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := ctxFor(t)

	// Every report resource the receiver reads, as discovery serves it (Gatekeeper: every constraint kind).
	type res struct {
		gvr        schema.GroupVersionResource
		kind       string
		namespaced bool
	}
	var reports []res
	for _, k := range receiverKinds(t) {
		gv := schema.GroupVersion{Group: k.group, Version: k.version}
		list, err := saCS.Discovery().ServerResourcesForGroupVersion(gv.String())
		require.NoError(t, err, "discovery of %s as the service account", gv)
		n := 0
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || (k.resources != nil && !slices.Contains(k.resources, r.Name)) {
				continue
			}
			reports = append(reports, res{gv.WithResource(r.Name), r.Kind, r.Namespaced})
			n++
		}
		require.Equal(t, max(len(k.resources), 1), n, "%s: the test CRDs serve the receiver's resources", gv)
	}
	require.Len(t, reports, 21)

	e.cluster.CreateNamespace(t, "shop")
	for _, r := range reports {
		list, err := sa.Resource(r.gvr).List(ctx, metav1.ListOptions{Limit: 500})
		if assert.NoError(t, err, "list %s across namespaces", r.gvr) {
			// As the receiver does after each list.
			w, err := sa.Resource(r.gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), AllowWatchBookmarks: true})
			if assert.NoError(t, err, "watch %s across namespaces", r.gvr) {
				w.Stop()
			}
		}
		if r.namespaced {
			_, err = sa.Resource(r.gvr).Namespace("shop").List(ctx, metav1.ListOptions{})
			assert.NoError(t, err, "list %s in a namespace", r.gvr)
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": r.gvr.GroupVersion().String(), "kind": r.kind, "metadata": map[string]any{"name": "forged"},
		}}
		ns := ""
		if r.namespaced {
			ns = "shop"
		}
		_, err = sa.Resource(r.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		isForbidden(t, err, "create "+r.gvr.String())
		err = sa.Resource(r.gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{})
		isForbidden(t, err, "deletecollection "+r.gvr.String())
	}

	// One report, written as its engine would: the collector reads and watches it, cannot change or delete it.
	prGVR := schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	e.cluster.Apply(t, prGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"results":  []any{map[string]any{"source": "kyverno", "policy": "require-labels", "result": "fail"}},
	}})
	got, err := sa.Resource(prGVR).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	// As the receiver does: list, then watch from the list's resourceVersion.
	list, err := sa.Resource(prGVR).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w, err := sa.Resource(prGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), AllowWatchBookmarks: true})
	require.NoError(t, err, "watch policyreports across namespaces")
	changed := got.DeepCopy()
	changed.SetManagedFields(nil)
	changed.SetResourceVersion("")
	changed.Object["results"] = []any{map[string]any{"source": "kyverno", "policy": "require-labels", "result": "pass"}}
	e.cluster.Apply(t, prGVR, changed)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, "MODIFIED", string(ev.Type), "%v", ev.Object)
	case <-time.After(10 * time.Second):
		t.Error("no watch event")
	}
	w.Stop()
	got.SetLabels(map[string]string{"tampered": "true"})
	_, err = sa.Resource(prGVR).Namespace("shop").Update(ctx, got, metav1.UpdateOptions{})
	isForbidden(t, err, "update a report")
	_, err = sa.Resource(prGVR).Namespace("shop").Patch(ctx, "web", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	isForbidden(t, err, "patch a report")
	err = sa.Resource(prGVR).Namespace("shop").Delete(ctx, "web", metav1.DeleteOptions{})
	isForbidden(t, err, "delete a report")

	// Leases: the one of leader election, in its namespace only.
	leases := saCS.CoordinationV1().Leases(saNamespace)
	holder := "replica-1"
	_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	require.NoError(t, err, "create the lease")
	lease, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	require.NoError(t, err, "get the lease")
	holder = "replica-2"
	lease.Spec.HolderIdentity = &holder
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	require.NoError(t, err, "update the lease")
	_, err = leases.List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "list leases")
	err = leases.Delete(ctx, leaseName, metav1.DeleteOptions{})
	isForbidden(t, err, "delete the lease")
	_, err = leases.Get(ctx, "kube-scheduler", metav1.GetOptions{})
	isForbidden(t, err, "get another lease in its namespace")
	for _, ns := range []string{"default", "kube-system", nodeNS} {
		_, err = saCS.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName}}, metav1.CreateOptions{})
		isForbidden(t, err, "create a lease in "+ns)
		_, err = saCS.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		isForbidden(t, err, "get a lease in "+ns)
	}

	// Nothing else: Secrets (not even its own namespace's), ConfigMaps, Pods, CRDs.
	_, err = e.cs.CoreV1().Secrets(saNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = saCS.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "list secrets cluster-wide")
	_, err = saCS.CoreV1().Secrets(saNamespace).List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "list secrets in its namespace")
	_, err = saCS.CoreV1().Secrets(saNamespace).Get(ctx, "s", metav1.GetOptions{})
	isForbidden(t, err, "get a secret in its namespace")
	_, err = saCS.CoreV1().Secrets(saNamespace).Watch(ctx, metav1.ListOptions{})
	isForbidden(t, err, "watch secrets")
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	_, err = saCS.CoreV1().ConfigMaps(saNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, dry)
	isForbidden(t, err, "create a configmap")
	_, err = saCS.CoreV1().ConfigMaps(saNamespace).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "otelcol-policy-config"}}, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	isForbidden(t, err, "update its configmap")
	_, err = saCS.CoreV1().Pods(saNamespace).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, dry)
	isForbidden(t, err, "create a pod")
	err = saCS.CoreV1().Pods(saNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	isForbidden(t, err, "delete pods")
	_, err = saCS.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "list pods")
	// Events: create and patch in its namespace (k8s_events), nothing else.
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Reason: "ComponentRecoverableError", Message: "m",
		Type: corev1.EventTypeWarning, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: saNamespace, Name: "p"}}
	_, err = saCS.CoreV1().Events(saNamespace).Create(ctx, event, dry)
	require.NoError(t, err, "create an event in its namespace")
	_, err = saCS.CoreV1().Events(saNamespace).List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "list events")
	err = saCS.CoreV1().Events(saNamespace).Delete(ctx, "e", metav1.DeleteOptions{})
	isForbidden(t, err, "delete an event")
	for _, ns := range []string{"default", nodeNS} {
		other := event.DeepCopy()
		other.Namespace, other.InvolvedObject.Namespace = ns, ns
		_, err = saCS.CoreV1().Events(ns).Create(ctx, other, dry)
		isForbidden(t, err, "create an event in "+ns)
	}
	_, err = sa.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "list CRDs")

	// The DaemonSet's identity has no rights at all.
	nodeCfg := e.cluster.Config(apiserver.AdminToken)
	nodeCfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + nodeNS + ":otelcol-policy-node",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + nodeNS, "system:authenticated"},
	}
	node, err := dynamic.NewForConfig(nodeCfg)
	require.NoError(t, err)
	_, err = node.Resource(prGVR).List(ctx, metav1.ListOptions{})
	isForbidden(t, err, "the DaemonSet's service account lists reports")
}

// workloadConfig is a collector config of a ConfigMap with the environment of the workload that mounts it.
// isWorkload says whether o runs the collector's pods.
func isWorkload(o *unstructured.Unstructured) bool {
	return slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet"}, o.GetKind())
}

type workloadConfig struct {
	workload *unstructured.Unstructured
	config   string
	env      map[string]string
	mounts   map[string]corev1.VolumeMount // by mount path
	volumes  map[string]corev1.Volume
}

func workloadConfigs(t *testing.T, objs []*unstructured.Unstructured) []workloadConfig {
	t.Helper()
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			configMaps[o.GetNamespace()+"/"+o.GetName()] = typed[corev1.ConfigMap](t, o)
		}
	}
	var out []workloadConfig
	used := map[string]bool{}
	for _, o := range objs {
		if !isWorkload(o) {
			continue
		}
		spec := typed[struct {
			Spec struct{ Template corev1.PodTemplateSpec }
		}](t, o).Spec.Template.Spec
		for _, c := range spec.Containers {
			if name, _, _ := splitImage(c.Image); name != imageName {
				continue
			}
			wc := workloadConfig{workload: o, env: map[string]string{}, mounts: map[string]corev1.VolumeMount{}, volumes: map[string]corev1.Volume{}}
			for _, ef := range c.EnvFrom {
				require.NotNil(t, ef.ConfigMapRef, "%s: envFrom", objID(o))
				cm := configMaps[o.GetNamespace()+"/"+ef.ConfigMapRef.Name]
				require.NotNil(t, cm, "%s: envFrom ConfigMap %s is not in the manifests", objID(o), ef.ConfigMapRef.Name)
				used[o.GetNamespace()+"/"+cm.Name] = true
				for k, v := range cm.Data {
					wc.env[k] = v
				}
			}
			for _, ev := range c.Env {
				if ev.ValueFrom != nil {
					// The downward API: a value the kubelet fills in, of the shape it would have.
					require.NotNil(t, ev.ValueFrom.FieldRef, "%s: env %s: only the downward API", objID(o), ev.Name)
					value, known := downwardExample[ev.ValueFrom.FieldRef.FieldPath]
					require.True(t, known, "%s: env %s: field %s", objID(o), ev.Name, ev.ValueFrom.FieldRef.FieldPath)
					wc.env[ev.Name] = value
					continue
				}
				wc.env[ev.Name] = ev.Value
			}
			for _, v := range spec.Volumes {
				wc.volumes[v.Name] = v
			}
			for _, m := range c.VolumeMounts {
				wc.mounts[m.MountPath] = m
			}
			// The image's ENTRYPOINT with --config of the mounted ConfigMap.
			require.Empty(t, c.Command, "%s: the image's ENTRYPOINT runs", objID(o))
			require.Equal(t, []string{"--config=" + configDir + "/config.yaml"}, c.Args, objID(o))
			m, ok := wc.mounts[configDir]
			require.True(t, ok, "%s: %s is mounted", objID(o), configDir)
			vol := wc.volumes[m.Name]
			require.NotNil(t, vol.ConfigMap, "%s: %s is a ConfigMap", objID(o), configDir)
			cm := configMaps[o.GetNamespace()+"/"+vol.ConfigMap.Name]
			require.NotNil(t, cm, "%s: ConfigMap %s is not in the manifests", objID(o), vol.ConfigMap.Name)
			used[o.GetNamespace()+"/"+cm.Name] = true
			wc.config = cm.Data["config.yaml"]
			require.NotEmpty(t, wc.config, "ConfigMap %s has config.yaml", cm.Name)

			// GOMEMLIMIT below the memory limit (about 80%).
			limit := c.Resources.Limits[corev1.ResourceMemory]
			require.False(t, limit.IsZero(), "%s: memory limit", objID(o))
			gml := resource.MustParse(strings.TrimSuffix(wc.env["GOMEMLIMIT"], "B"))
			ratio := float64(gml.Value()) / float64(limit.Value())
			assert.True(t, ratio >= 0.7 && ratio <= 0.9, "%s: GOMEMLIMIT is %.0f%% of the memory limit", objID(o), ratio*100)
			out = append(out, wc)
		}
	}
	for id := range configMaps {
		assert.True(t, used[id], "ConfigMap %s is used by a workload", id)
	}
	require.Len(t, out, 2)
	return out
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// TestKubernetesConfigsValidate: each workload's collector config is valid for this binary with the environment
// the workload gives it, and writes only where the read-only root file system has a volume.
func TestKubernetesConfigsValidate(t *testing.T) {
	validateWorkloadConfigs(t, kustomize(t, kubernetesDir(t)))
}

// validateWorkloadConfigs runs `otelcol-policy validate` on the config of each workload of objs, with its
// environment, and checks its writable directories and probes.
func validateWorkloadConfigs(t *testing.T, objs []*unstructured.Unstructured) {
	for _, wc := range workloadConfigs(t, objs) {
		t.Run(wc.workload.GetKind(), func(t *testing.T) {
			for _, m := range envRef.FindAllStringSubmatch(wc.config, -1) {
				if m[2] == "" {
					assert.Contains(t, wc.env, m[1], "${env:%s} is set by the pod", m[1])
				}
			}
			path := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(path, []byte(wc.config), 0o600))
			cmd := exec.Command(collectortest.Binary(t), "validate", "--config="+path)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			for k, v := range wc.env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "otelcol-policy validate:\n%s", out)

			var cfg struct {
				Extensions map[string]map[string]any
				Receivers  map[string]map[string]any
				Service    struct{ Extensions []string }
			}
			require.NoError(t, yaml.Unmarshal([]byte(wc.config), &cfg))
			// Every directory the collector writes is a writable volume mount (the root file system is read-only).
			writable := func(dir string) {
				t.Helper()
				m, ok := wc.mounts[dir]
				require.True(t, ok, "%s is a volume mount", dir)
				assert.False(t, m.ReadOnly, "%s is writable", dir)
			}
			for id, ext := range cfg.Extensions {
				if strings.HasPrefix(id, "file_storage") {
					writable(ext["directory"].(string))
				}
			}
			if dl, ok := cfg.Receivers["decision_logs"]; ok {
				for _, s := range dl["ndjson"].([]any) {
					writable(filepath.Dir(s.(map[string]any)["endpoint"].(string)))
				}
			}
			// The probes ask health_check.
			_, port, _ := strings.Cut(cfg.Extensions["health_check"]["endpoint"].(string), ":")
			var c corev1.Container
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(containers(wc.workload)[len(containers(wc.workload))-1], &c))
			var health int32
			for _, p := range c.Ports {
				if p.Name == "health" {
					health = p.ContainerPort
				}
			}
			assert.Equal(t, port, strconv.Itoa(int(health)))
			require.NotNil(t, c.LivenessProbe)
			require.NotNil(t, c.ReadinessProbe)
			assert.Equal(t, "health", c.LivenessProbe.HTTPGet.Port.String())
			assert.Equal(t, "health", c.ReadinessProbe.HTTPGet.Port.String())

			// The self-metrics on all interfaces, on the port named metrics (what Prometheus scrapes).
			var telemetry struct {
				Service struct {
					Telemetry struct {
						Metrics struct {
							Readers []struct {
								Pull struct {
									Exporter struct {
										Prometheus struct {
											Host string
											Port int32
										}
									}
								}
							}
						}
					}
				}
			}
			require.NoError(t, yaml.Unmarshal([]byte(wc.config), &telemetry))
			readers := telemetry.Service.Telemetry.Metrics.Readers
			require.Len(t, readers, 1, "one pull reader")
			assert.Equal(t, "0.0.0.0", readers[0].Pull.Exporter.Prometheus.Host)
			i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
			require.NotEqual(t, -1, i, "a container port named metrics")
			assert.Equal(t, readers[0].Pull.Exporter.Prometheus.Port, c.Ports[i].ContainerPort)

			// policy_metrics' series, when the config serves them, on all interfaces on the port named
			// policy-metrics; the port only with them.
			var scrape struct {
				Exporters struct {
					Prometheus *struct{ Endpoint string }
				}
			}
			require.NoError(t, yaml.Unmarshal([]byte(wc.config), &scrape))
			i = slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "policy-metrics" })
			if scrape.Exporters.Prometheus == nil {
				assert.Equal(t, -1, i, "a container port policy-metrics without the prometheus exporter")
			} else {
				require.NotEqual(t, -1, i, "a container port named policy-metrics")
				assert.Equal(t, fmt.Sprintf("0.0.0.0:%d", c.Ports[i].ContainerPort), scrape.Exporters.Prometheus.Endpoint)
			}
		})
	}
}

// dockerfile is the instructions of the Dockerfile, grouped by stage.
type dockerStage struct {
	from, name string
	instrs     [][2]string // instruction, arguments
}

func parseDockerfile(t *testing.T, path string) []dockerStage {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var stages []dockerStage
	sc := bufio.NewScanner(f)
	var line string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && line == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			line += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		line += l
		instr, args, _ := strings.Cut(line, " ")
		instr, args, line = strings.ToUpper(instr), strings.TrimSpace(args), ""
		if instr == "FROM" {
			f := strings.Fields(args)
			s := dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		require.NotEmpty(t, stages, "%s before FROM", instr)
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, [2]string{instr, args})
	}
	require.NoError(t, sc.Err())
	return stages
}

func (s dockerStage) all(instr string) []string {
	var out []string
	for _, i := range s.instrs {
		if i[0] == instr {
			out = append(out, i[1])
		}
	}
	return out
}

// TestDockerfile checks what can be checked of the image without a Docker engine: the build does what `make
// build` does for the same Go, OCB and sources, the binary is static, and the final stage runs it as the
// non-root user, at the path and with the config path the Kubernetes manifests expect. No test builds the image.
func TestDockerfile(t *testing.T) {
	root := collectortest.RepoRoot(t)
	stages := parseDockerfile(t, filepath.Join(root, "distributions", "otelcol-policy", "Dockerfile"))
	require.Len(t, stages, 2)
	build, final := stages[0], stages[1]

	// Build stage: Go of go.mod, OCB of the Makefile, static.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	require.NotNil(t, goVersion)
	assert.Equal(t, "golang:"+string(goVersion[1]), build.from)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	ocb := regexp.MustCompile(`(?m)^OCB_VERSION\s*:=\s*(\S+)`).FindSubmatch(makefile)
	require.NotNil(t, ocb)
	assert.Contains(t, build.all("ARG"), "OCB_VERSION="+string(ocb[1]))
	assert.Contains(t, strings.Join(build.all("RUN"), "\n"), "go install go.opentelemetry.io/collector/cmd/builder@${OCB_VERSION}")
	assert.Contains(t, strings.Fields(strings.Join(build.all("ENV"), " ")), "CGO_ENABLED=0")
	runs := strings.Join(build.all("RUN"), "\n")
	assert.Contains(t, runs, "builder --config builder-config.yaml")
	assert.Contains(t, runs, "grep -q 'CGO_ENABLED=0'", "the build fails on a dynamic binary")

	// OCB writes dist.output_path/dist.name; that is what the final stage copies.
	var bc struct {
		Dist struct {
			Name       string `json:"name"`
			OutputPath string `json:"output_path"`
			Version    string `json:"version"`
		} `json:"dist"`
	}
	raw, err := os.ReadFile(filepath.Join(root, "builder-config.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &bc))
	assert.Contains(t, runs, "cp "+filepath.Join(bc.Dist.OutputPath, bc.Dist.Name)+" /out/otelcol-policy")

	// The sources copied into the build stage hold every package of this module the distribution imports.
	var copied []string
	for _, c := range build.all("COPY") {
		f := strings.Fields(c)
		for _, src := range f[:len(f)-1] {
			_, err := os.Stat(filepath.Join(root, src))
			require.NoError(t, err, "COPY %s", src)
			copied = append(copied, filepath.Clean(src))
		}
	}
	assert.Subset(t, copied, []string{"go.mod", "go.sum", "builder-config.yaml"})
	imports := regexp.MustCompile(`import:\s*(\S+)`).FindAllSubmatch(raw, -1)
	args := []string{"list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}"}
	for _, m := range imports {
		if strings.HasPrefix(string(m[1]), "github.com/otelcol-policy/otelcol-policy/") {
			args = append(args, string(m[1]))
		}
	}
	require.Greater(t, len(args), 4)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		top := strings.Split(rel, string(filepath.Separator))[0]
		assert.Contains(t, copied, top, "package %s is built but not copied into the build stage", rel)
	}

	// `make build` with the same builder config makes a static binary (the Dockerfile's RUN checks it too).
	info, err := buildinfo.ReadFile(collectortest.Binary(t))
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	assert.Equal(t, "0", settings["CGO_ENABLED"], "bin/otelcol-policy is static")

	// Final stage: distroless static, non-root 10001, the binary and config paths of the manifests.
	assert.Equal(t, "gcr.io/distroless/static-debian12:nonroot", final.from)
	assert.Equal(t, []string{"10001:10001"}, final.all("USER"))
	assert.Equal(t, []string{`["` + binaryInPath + `"]`}, final.all("ENTRYPOINT"))
	assert.Equal(t, []string{`["--config=` + configDir + `/config.yaml"]`}, final.all("CMD"))
	copies := final.all("COPY")
	assert.Contains(t, copies, "--from=build /out/otelcol-policy "+binaryInPath)
	// The config it copies and the ports it exposes: TestContainerConfig.
	for _, r := range final.all("RUN") {
		t.Errorf("the final stage has no shell: RUN %s", r)
	}

	// The manifests run this image (tagged with the distribution's version) as the same user, with the same
	// config path, with no command of their own (see TestKubernetesConfigsValidate).
	objs := kustomize(t, kubernetesDir(t))
	n := 0
	for _, o := range objs {
		var spec corev1.PodSpec
		if ps := podSpec(o); ps != nil {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(ps, &spec))
		}
		for _, c := range spec.Containers {
			name, tag, _ := splitImage(c.Image)
			if name != imageName {
				continue
			}
			n++
			assert.Equal(t, bc.Dist.Version, tag, objID(o))
			require.NotNil(t, c.SecurityContext)
			assert.Equal(t, int64(10001), *c.SecurityContext.RunAsUser, objID(o))
			assert.Equal(t, int64(10001), *c.SecurityContext.RunAsGroup, objID(o))
			assert.True(t, *c.SecurityContext.RunAsNonRoot, objID(o))
			assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem, objID(o))
			assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation, objID(o))
			assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop, objID(o))
			assert.Empty(t, c.SecurityContext.Capabilities.Add, objID(o))
			assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, c.SecurityContext.SeccompProfile.Type, objID(o))
		}
	}
	assert.Equal(t, 2, n, "the Deployment and the DaemonSet run the image")
}

// sinkResults is what the sink received of results: "policy.name policy.result policy.result.state" a record.
func sinkResults(sink *collectortest.OTLPSink) []string {
	var out []string
	sink.Each(func(_ pcommon.Resource, lr plog.LogRecord) {
		if policyresult.EventName(lr) != policyresult.EventResult {
			return
		}
		get := func(k string) string {
			v, _ := lr.Attributes().Get(k)
			return v.AsString()
		}
		out = append(out, get(policyresult.AttrPolicy)+" "+get(policyresult.AttrResult)+" "+get(policyresult.AttrResultState))
	})
	return out
}

// sinkSummaries is what the sink received of summaries: "policy.name counts change" a record.
func sinkSummaries(t *testing.T, sink *collectortest.OTLPSink) []string {
	var out []string
	sink.Each(func(_ pcommon.Resource, lr plog.LogRecord) {
		if policyresult.EventName(lr) != policyresult.EventSummary {
			return
		}
		s, err := policyresult.ReadSummaryLogRecord(lr)
		require.NoError(t, err)
		policy := ""
		for _, a := range s.Attributes {
			if a.Name == policyresult.AttrPolicy {
				policy = a.Value
			}
		}
		out = append(out, fmt.Sprintf("%s %+v %+v", policy, s.Counts, s.Change))
	})
	return out
}

// sinkGauges is every emission of the policy.results gauges the sink received: "pass=… fail=…" for one label
// set, in arrival order.
func sinkGauges(sink *collectortest.OTLPSink) []string {
	var out []string
	for _, md := range sink.Metrics() {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() != policyresult.MetricResults {
						continue
					}
					byOutcome := map[string]int64{}
					for _, dp := range m.Gauge().DataPoints().All() {
						o, _ := dp.Attributes().Get(policyresult.AttrResult)
						byOutcome[o.Str()] = dp.IntValue()
					}
					out = append(out, fmt.Sprintf("pass=%d fail=%d", byOutcome["pass"], byOutcome["fail"]))
				}
			}
		}
	}
	return out
}

// waitSinkResults waits until the sink received n records.
func waitSinkResults(t *testing.T, sink *collectortest.OTLPSink, n int) []string {
	t.Helper()
	collectortest.Eventually(t, 30*time.Second, func() error {
		if got := sinkResults(sink); len(got) < n {
			return fmt.Errorf("%d of %d records: %v", len(got), n, got)
		}
		return nil
	})
	return sinkResults(sink)
}

// TestKubernetesDeploymentReplicasHandOver runs the StatefulSet's collector config twice, as two replicas would:
// the real binary, as the ServiceAccount (a kubeconfig impersonating it, so the manifests' RBAC is what
// authorizes it), with the shared state directory of the ReadWriteMany volume and a queue directory each. One
// replica leads and ships the reports, their summaries and gauges; when it stops, the other takes over from the
// shared state without re-sending, and ships what changes next, with summaries and gauges that count what the
// first one counted: nothing zeroed, nothing doubled.
func TestKubernetesDeploymentReplicasHandOver(t *testing.T) {
	e := startKubeEnv(t)
	ctx := ctxFor(t)
	var config string
	for _, wc := range workloadConfigs(t, e.objs) {
		if wc.workload.GetKind() == "StatefulSet" {
			config = wc.config
		}
	}
	prGVR := schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	e.cluster.CreateNamespace(t, "shop")
	report := func(result string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
			"metadata": map[string]any{"name": "web", "namespace": "shop"},
			"scope":    map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web-0"},
			"results":  []any{map[string]any{"source": "kyverno", "policy": "require-labels", "rule": "check-team", "result": result}},
		}}
	}
	e.cluster.Apply(t, prGVR, report("fail"))

	sink := collectortest.StartOTLPSink(t)

	// The ServiceAccount's identity: an admin token impersonating it.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %s, certificate-authority: %s}
users:
- name: sa
  user:
    token: %s
    as: system:serviceaccount:%s:%s
    as-groups: [system:serviceaccounts, "system:serviceaccounts:%s", system:authenticated]
contexts:
- name: test
  context: {cluster: test, user: sa}
current-context: test
`, e.cluster.URL, e.cluster.Config("").CAFile, apiserver.AdminToken, saNamespace, saName, saNamespace), 0o600))

	shared := t.TempDir()
	base := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(base, []byte(config), 0o600))
	type replica struct {
		c       *collectortest.Collector
		health  string
		metrics ports
	}
	startReplica := func(name string) replica {
		dir := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		health, metrics, policyMetrics := collectortest.FreePort(t), collectortest.FreePort(t), collectortest.FreePort(t)
		overlay := filepath.Join(dir, "overlay.yaml")
		collectortest.ReplicaOverlay{Health: health, Metrics: metrics, PolicyMetrics: policyMetrics, Shared: shared,
			Queue: filepath.Join(dir, "queue")}.Write(t, overlay)
		// What the downward API gives a replica's pod.
		pod := []string{"K8S_POD_NAME=otelcol-policy-" + name, "K8S_POD_NAMESPACE=" + saNamespace, "K8S_POD_UID=" + downwardExample["metadata.uid"]}
		c := collectortest.StartEnv(t, dir, append([]string{"KUBECONFIG=" + kubeconfig, "CLUSTER_NAME=test", "OTLP_ENDPOINT=" + sink.URL}, pod...), base, overlay)
		url := fmt.Sprintf("http://127.0.0.1:%d/", health)
		c.WaitHealthy(url)
		return replica{c, url, ports{Metrics: metrics, PolicyMetrics: policyMetrics}}
	}
	a := startReplica("a")
	b := startReplica("b")

	assert.Equal(t, []string{"require-labels fail new"}, waitSinkResults(t, sink, 1))
	lease, err := e.cs.CoordinationV1().Leases(saNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.HolderIdentity)
	leader, follower := a, b
	if !strings.Contains(a.c.Output(), "Started leading") {
		leader, follower = b, a
	}
	require.Contains(t, leader.c.Output(), "Started leading")
	assert.NotContains(t, follower.c.Output(), "Started leading")
	assert.NotContains(t, leader.c.Output()+follower.c.Output(), "forbidden", "RBAC allows what the collector does")
	// Only the leader serves the gauges on its scrape endpoint: Prometheus scraping both replicas sees each
	// series once.
	waitScrapedGauges(t, leader.metrics, "pass=0 fail=1")
	assert.NotContains(t, scrapePolicyMetrics(t, follower.metrics), "policy_results", "the follower serves no series")

	// The leader stops (a rollout): it releases the lease, the follower takes over from the shared state.
	leader.c.Stop()
	follower.c.WaitOutput("Started leading", 30*time.Second)
	follower.c.WaitHealthy(follower.health)
	// What changes next is the signal: the new leader ships it after what it listed when it took over, so
	// once it arrived and the exporter holds nothing more, a result re-sent would have arrived too.
	e.cluster.Apply(t, prGVR, report("pass"))
	waitSinkResults(t, sink, 2)
	collectortest.Eventually(t, 30*time.Second, func() error {
		if n := len(sinkSummaries(t, sink)); n < 2 {
			return fmt.Errorf("%d summaries", n)
		}
		if g := sinkGauges(sink); len(g) == 0 || g[len(g)-1] != "pass=1 fail=0" {
			return fmt.Errorf("gauges %v", g)
		}
		return nil
	})
	waitDrained(t, follower.metrics, "otlp_http", 2)
	waitScrapedGauges(t, follower.metrics, "pass=1 fail=0")
	follower.c.Stop()
	assert.Equal(t, []string{"require-labels fail new", "require-labels pass changed"}, sinkResults(sink),
		"the new leader continues from the shared state: nothing re-sent, and it ships what changes next")
	assert.Equal(t, []string{
		"require-labels {Pass:0 Fail:1 Warn:0 Error:0 Skip:0 Total:1} {Pass:0 Fail:1 Warn:0 Error:0 Skip:0 Total:1}",
		"require-labels {Pass:1 Fail:0 Warn:0 Error:0 Skip:0 Total:1} {Pass:1 Fail:-1 Warn:0 Error:0 Skip:0 Total:0}",
	}, sinkSummaries(t, sink), "one summary per change; the new leader's continues from the old leader's counts")
	for _, g := range sinkGauges(sink) {
		assert.Contains(t, []string{"pass=0 fail=1", "pass=1 fail=0"}, g, "every emission of the gauges counts the one result once")
	}
}

// TestKubernetesReportsConfigWatchesEveryKind: the shipped report watcher reads every findings kind the
// receiver knows, as the receiver's defaults do; only Kyverno's ephemeral reports (intermediate, off by default)
// stay off. A kinds: block added to the ConfigMap that switched one off would fail here.
func TestKubernetesReportsConfigWatchesEveryKind(t *testing.T) {
	var checked int
	for _, wc := range workloadConfigs(t, kustomize(t, kubernetesDir(t))) {
		var raw struct {
			Receivers map[string]map[string]any
		}
		require.NoError(t, yaml.Unmarshal([]byte(wc.config), &raw))
		for id, settings := range raw.Receivers {
			if id != "k8s_reports" && !strings.HasPrefix(id, "k8s_reports/") {
				continue
			}
			cfg := k8sreportsreceiver.NewFactory().CreateDefaultConfig().(*k8sreportsreceiver.Config)
			require.NoError(t, confmap.NewFromStringMap(settings).Unmarshal(cfg), "%s: %s", objID(wc.workload), id)
			kinds := reflect.ValueOf(cfg.Kinds)
			for i := range kinds.NumField() {
				name := kinds.Type().Field(i).Tag.Get("mapstructure")
				assert.Equal(t, name != "ephemeral_reports", kinds.Field(i).Bool(), "%s: %s kinds::%s", objID(wc.workload), id, name)
			}
			checked++
		}
	}
	assert.Equal(t, 1, checked, "the Deployment's k8s_reports receiver")
}
