// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/gatekeepertest"
)

// The sidecar component (kubernetes/gatekeeper-sidecar) is a kustomize Component patching Gatekeeper's release
// manifest, which hack/test-servers.sh takes from Gatekeeper's module zip. The minimal kustomize of
// kubernetes_test.go is extended here with what the component uses: `patches:` with strategic merge patches and
// JSON 6902 "add" operations. When kubectl is installed, the result is compared with `kubectl kustomize`.

const (
	gatekeeperNS            = gatekeepertest.Namespace
	gatekeeperAudit         = "gatekeeper-audit"
	sidecarName             = "otelcol-policy"
	serviceAccountTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"
)

func sidecarComponentDir(t *testing.T) string {
	return filepath.Join(kubernetesDir(t), "gatekeeper-sidecar")
}

type kustomizeComponent struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path   string `json:"path"`
		Target *struct {
			Group     string `json:"group"`
			Version   string `json:"version"`
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"target"`
	} `json:"patches"`
}

// withComponent is objs with the kustomize Component in dir: its resources added, then its patches applied.
func withComponent(t *testing.T, objs []*unstructured.Unstructured, dir string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var c kustomizeComponent
	require.NoError(t, yaml.UnmarshalStrict(raw, &c), "%s uses a kustomize feature this test does not implement", dir)
	require.Equal(t, "kustomize.config.k8s.io/v1alpha1", c.APIVersion)
	require.Equal(t, "Component", c.Kind)
	for _, r := range c.Resources {
		objs = append(objs, apiserver.Objects(t, filepath.Join(dir, r))...)
	}
	for _, p := range c.Patches {
		path := filepath.Join(dir, p.Path)
		if p.Target == nil {
			// A strategic merge patch names its target.
			for _, patch := range apiserver.Objects(t, path) {
				target := find(t, objs, patch.GetKind(), patch.GetNamespace(), patch.GetName())
				strategicMerge(t, target, patch)
			}
			continue
		}
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, yaml.UnmarshalStrict(raw, &ops), "%s: a JSON 6902 patch", path)
		target := find(t, objs, p.Target.Kind, p.Target.Namespace, p.Target.Name)
		require.Equal(t, p.Target.Group+"/"+p.Target.Version, target.GetAPIVersion(), "%s: target", path)
		for _, op := range ops {
			require.Equal(t, "add", op.Op, "%s: only add operations are implemented", path)
			segs := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
			out, err := jsonPatchAdd(target.Object, segs, op.Value)
			require.NoError(t, err, "%s: %s", path, op.Path)
			target.Object = out.(map[string]any)
		}
	}
	return objs
}

func strategicMerge(t *testing.T, target, patch *unstructured.Unstructured) {
	t.Helper()
	schemaObj, err := scheme.Scheme.New(target.GroupVersionKind())
	require.NoError(t, err, "a strategic merge patch needs a built-in kind: %s", objID(target))
	merged, err := strategicpatch.StrategicMergeMapPatch(target.Object, patch.Object, schemaObj)
	require.NoError(t, err, objID(target))
	target.Object = merged
}

// jsonPatchAdd is the JSON 6902 "add" of value at the path segments below node (RFC 6901 escapes unused).
func jsonPatchAdd(node any, segs []string, value any) (any, error) {
	key := segs[0]
	switch n := node.(type) {
	case map[string]any:
		if len(segs) == 1 {
			n[key] = value
			return n, nil
		}
		child, ok := n[key]
		if !ok {
			return nil, os.ErrNotExist
		}
		c, err := jsonPatchAdd(child, segs[1:], value)
		n[key] = c
		return n, err
	case []any:
		if len(segs) == 1 && key == "-" {
			return append(n, value), nil
		}
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i > len(n) || (len(segs) > 1 && i == len(n)) {
			return nil, os.ErrNotExist
		}
		if len(segs) == 1 {
			return slices.Insert(n, i, value), nil
		}
		c, err := jsonPatchAdd(n[i], segs[1:], value)
		n[i] = c
		return n, err
	default:
		return nil, os.ErrNotExist
	}
}

// gatekeeperWithSidecar is Gatekeeper's release manifest with the sidecar component.
func gatekeeperWithSidecar(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Gatekeeper's release manifest, which hack/test-servers.sh caches")
	}
	return withComponent(t, apiserver.Objects(t, gatekeepertest.ReleaseManifest(t)), sidecarComponentDir(t))
}

// TestKubernetesGatekeeperSidecarMatchesKubectl compares the minimal kustomize with the real one, when kubectl
// is there.
func TestKubernetesGatekeeperSidecarMatchesKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	ours := gatekeeperWithSidecar(t)
	dir := t.TempDir()
	manifest, err := os.ReadFile(gatekeepertest.ReleaseManifest(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gatekeeper.yaml"), manifest, 0o600))
	// kustomize takes a component's path relative to the kustomization.
	rel, err := filepath.Rel(dir, sidecarComponentDir(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [gatekeeper.yaml]
components: [`+rel+`]
`), 0o600))
	var stderr strings.Builder
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize: %s", stderr.String())
	theirs := map[string]string{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o unstructured.Unstructured
		require.NoError(t, yaml.Unmarshal([]byte(doc), &o.Object))
		b, err := json.Marshal(o.Object)
		require.NoError(t, err)
		theirs[objID(&o)] = string(b)
	}
	require.Len(t, theirs, len(ours))
	for _, o := range ours {
		b, err := json.Marshal(o.Object)
		require.NoError(t, err)
		assert.JSONEq(t, theirs[objID(o)], string(b), objID(o))
	}
}

// auditDeployment is the audit Deployment of objs, with its manager and sidecar containers.
func auditDeployment(t *testing.T, objs []*unstructured.Unstructured) (dep *appsv1.Deployment, manager, sidecar corev1.Container) {
	t.Helper()
	dep = typed[appsv1.Deployment](t, find(t, objs, "Deployment", gatekeeperNS, gatekeeperAudit))
	cs := dep.Spec.Template.Spec.Containers
	require.Len(t, cs, 2, "Gatekeeper's manager and the sidecar")
	require.Equal(t, "manager", cs[0].Name)
	require.Equal(t, sidecarName, cs[1].Name)
	return dep, cs[0], cs[1]
}

func mountAt(c corev1.Container, path string) (corev1.VolumeMount, bool) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return m, true
		}
	}
	return corev1.VolumeMount{}, false
}

func volumeNamed(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// TestKubernetesGatekeeperSidecarShares: Gatekeeper's audit exports to the Connection's path, which is an
// emptyDir both containers mount read-write, and the sidecar's collector reads that same path, with its state in
// a volume of its own; the sidecar runs with least privilege.
func TestKubernetesGatekeeperSidecarShares(t *testing.T) {
	objs := gatekeeperWithSidecar(t)
	dep, manager, sidecar := auditDeployment(t, objs)
	spec := dep.Spec.Template.Spec

	// The audit exports through the Connection audit-connection on the channel audit-channel: the last of
	// repeated flags wins.
	flag := func(name string) string {
		v := ""
		for _, a := range manager.Args {
			if after, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				v = after
			}
		}
		return v
	}
	assert.Equal(t, "true", flag("enable-violation-export"))
	assert.Equal(t, gatekeepertest.ConnectionName, flag("audit-connection"))
	assert.Equal(t, gatekeepertest.Channel, flag("audit-channel"))
	assert.Contains(t, manager.Args, "--operation=audit", "Gatekeeper's own arguments are kept")

	conn := find(t, objs, "Connection", gatekeeperNS, gatekeepertest.ConnectionName)
	driver, _, _ := unstructured.NestedString(conn.Object, "spec", "driver")
	exportPath, _, _ := unstructured.NestedString(conn.Object, "spec", "config", "path")
	maxResults, _, _ := unstructured.NestedFloat64(conn.Object, "spec", "config", "maxAuditResults")
	assert.Equal(t, "disk", driver)
	assert.True(t, maxResults >= 1 && maxResults <= 5, "maxAuditResults %v", maxResults)

	// One emptyDir at the Connection's path in both containers, writable in both (the reader locks files and
	// deletes the admission segments it consumed).
	gm, ok := mountAt(manager, exportPath)
	require.True(t, ok, "the manager mounts the Connection's path %s", exportPath)
	sm, ok := mountAt(sidecar, exportPath)
	require.True(t, ok, "the sidecar mounts the Connection's path %s", exportPath)
	assert.Equal(t, gm.Name, sm.Name, "the same volume")
	assert.False(t, gm.ReadOnly)
	assert.False(t, sm.ReadOnly)
	assert.Empty(t, gm.SubPath+sm.SubPath)
	vol := volumeNamed(spec, gm.Name)
	require.NotNil(t, vol)
	assert.NotNil(t, vol.EmptyDir, "the export volume is an emptyDir")

	// The collector reads the Connection's path and keeps its position in file_storage, on a writable volume of
	// its own; the config is the component's ConfigMap.
	cm, ok := mountAt(sidecar, configDir)
	require.True(t, ok)
	assert.True(t, cm.ReadOnly)
	cmVol := volumeNamed(spec, cm.Name)
	require.NotNil(t, cmVol)
	require.NotNil(t, cmVol.ConfigMap)
	config := typed[corev1.ConfigMap](t, find(t, objs, "ConfigMap", gatekeeperNS, cmVol.ConfigMap.Name)).Data["config.yaml"]
	var cfg struct {
		Extensions map[string]map[string]any
		Receivers  struct {
			DecisionLogs struct {
				ClusterName      string `json:"cluster_name"`
				Storage          string
				GatekeeperExport struct{ Path string } `json:"gatekeeper_export"`
			} `json:"decision_logs"`
		}
		Service struct {
			Extensions []string
			Pipelines  map[string]struct{ Receivers []string }
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(config), &cfg))
	dl := cfg.Receivers.DecisionLogs
	assert.Equal(t, exportPath, dl.GatekeeperExport.Path, "decision_logs::gatekeeper_export reads the Connection's path")
	assert.Equal(t, "${env:CLUSTER_NAME}", dl.ClusterName)
	require.NotEmpty(t, dl.Storage, "decision_logs::storage: at least once across restarts")
	assert.Contains(t, cfg.Service.Extensions, dl.Storage)
	assert.Contains(t, cfg.Service.Pipelines["logs"].Receivers, "decision_logs")
	stateDir, _ := cfg.Extensions[dl.Storage]["directory"].(string)
	state, ok := mountAt(sidecar, stateDir)
	require.True(t, ok, "the storage directory %s is a volume mount", stateDir)
	assert.False(t, state.ReadOnly)
	assert.NotEqual(t, sm.Name, state.Name, "the state is not in Gatekeeper's export directory")
	require.NotNil(t, volumeNamed(spec, state.Name))
	assert.NotNil(t, volumeNamed(spec, state.Name).EmptyDir)
	// The binary validates the config with the environment the sidecar gets: its ConfigMaps and its own.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, ef := range sidecar.EnvFrom {
		settings := typed[corev1.ConfigMap](t, find(t, objs, "ConfigMap", gatekeeperNS, ef.ConfigMapRef.Name))
		for k, v := range settings.Data {
			env = append(env, k+"="+v)
		}
	}
	for _, e := range sidecar.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	configPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(configPath, []byte(config), 0o600))
	validate := exec.Command(collectortest.Binary(t), "validate", "--config="+configPath)
	validate.Env = env
	out, err := validate.CombinedOutput()
	require.NoError(t, err, "otelcol-policy validate:\n%s", out)
	_, port, _ := strings.Cut(cfg.Extensions["health_check"]["endpoint"].(string), ":")
	require.Len(t, sidecar.Ports, 1)
	assert.Equal(t, port, strconv.Itoa(int(sidecar.Ports[0].ContainerPort)))
	assert.Equal(t, sidecar.Ports[0].Name, sidecar.LivenessProbe.HTTPGet.Port.String())
	assert.Equal(t, sidecar.Ports[0].Name, sidecar.ReadinessProbe.HTTPGet.Port.String())

	// Least privilege: the image as the other manifests run it, non-root, read-only root, nothing to escalate,
	// and the service account token hidden under an empty read-only volume.
	name, tag, _ := splitImage(sidecar.Image)
	assert.Equal(t, imageName+":"+releaseVersion(t), name+":"+tag)
	assert.Empty(t, sidecar.Command)
	assert.Equal(t, []string{"--config=" + configDir + "/config.yaml"}, sidecar.Args)
	sc := sidecar.SecurityContext
	require.NotNil(t, sc)
	assert.Equal(t, int64(10001), *sc.RunAsUser)
	assert.Equal(t, int64(10001), *sc.RunAsGroup)
	assert.True(t, *sc.RunAsNonRoot)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	tm, ok := mountAt(sidecar, serviceAccountTokenPath)
	require.True(t, ok, "the token path is covered")
	assert.True(t, tm.ReadOnly)
	tokenVol := volumeNamed(spec, tm.Name)
	require.NotNil(t, tokenVol)
	assert.NotNil(t, tokenVol.EmptyDir, "an empty volume, not the token")
	assert.Equal(t, []string{"--config=" + configDir + "/config.yaml"}, sidecar.Args)
}

// TestKubernetesGatekeeperSidecarOnAPIServer applies Gatekeeper's release manifest with the sidecar component to
// a real kube-apiserver: its CRDs, Namespace and identities for real, everything else with a server-side dry
// run and no warning (gatekeeper-system enforces Pod Security "restricted"), and the audit Deployment's Pod is
// admitted, with the service account token mounted into Gatekeeper's manager and not into the sidecar.
func TestKubernetesGatekeeperSidecarOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(stop)
	objs := gatekeeperWithSidecar(t)
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			path := filepath.Join(t.TempDir(), "crd.yaml")
			b, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b, 0o600))
			cluster.InstallCRDs(t, path)
		}
	}
	e := newKubeEnv(t, cluster, objs)

	ns := find(t, objs, "Namespace", "", gatekeeperNS)
	assert.Equal(t, "restricted", ns.GetLabels()["pod-security.kubernetes.io/enforce"], "Gatekeeper's namespace")
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount":
			require.NoError(t, e.apply(t, o, false), objID(o))
		}
	}
	e.warn.take()
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		require.NoError(t, e.apply(t, o, true), "server-side dry-run apply of %s", objID(o))
		assert.Empty(t, e.warn.take(), "%s: API server warnings", objID(o))
	}

	// The Pod the audit Deployment's ReplicaSet would create, through admission: Pod Security enforces
	// "restricted", and the ServiceAccount plugin mounts the token into every container without a mount at its
	// path.
	pod := podOf(t, find(t, objs, "Deployment", gatekeeperNS, gatekeeperAudit), gatekeeperNS)
	created, err := e.dc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(gatekeeperNS).Create(ctxFor(t), pod,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "the audit Pod with the sidecar is admitted in %s", gatekeeperNS)
	admitted := typed[corev1.Pod](t, created)
	require.Len(t, admitted.Spec.Containers, 2)
	tokenVolume := func(c corev1.Container) string {
		m, _ := mountAt(c, serviceAccountTokenPath)
		return m.Name
	}
	managerToken := volumeNamed(admitted.Spec, tokenVolume(admitted.Spec.Containers[0]))
	require.NotNil(t, managerToken, "Gatekeeper's manager has its token")
	assert.NotNil(t, managerToken.Projected, "the manager's token is the projected service account token")
	sidecarToken := volumeNamed(admitted.Spec, tokenVolume(admitted.Spec.Containers[1]))
	require.NotNil(t, sidecarToken)
	assert.Nil(t, sidecarToken.Projected, "no token in the sidecar")
	assert.NotNil(t, sidecarToken.EmptyDir)

	// Control: without the empty volume the sidecar would get the token.
	exposed := podOf(t, find(t, objs, "Deployment", gatekeeperNS, gatekeeperAudit), gatekeeperNS)
	sc := containers(exposed)[1]
	var mounts []any
	for _, m := range sc["volumeMounts"].([]any) {
		if m.(map[string]any)["mountPath"] != serviceAccountTokenPath {
			mounts = append(mounts, m)
		}
	}
	sc["volumeMounts"] = mounts
	created, err = e.dc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(gatekeeperNS).Create(ctxFor(t), exposed,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	exposedPod := typed[corev1.Pod](t, created)
	v := volumeNamed(exposedPod.Spec, tokenVolume(exposedPod.Spec.Containers[1]))
	require.NotNil(t, v, "the admission plugin mounts the token into a container that does not cover its path")
	assert.NotNil(t, v.Projected)
}
