// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package gatekeepertest runs a real Gatekeeper (the one hack/test-servers.sh builds) out of cluster against the
// kube-apiserver of internal/testutil/apiserver, with its violation export going to a disk Connection, for tests of what
// reads Gatekeeper's export directory. It runs the audit, status and generate operations (no webhook), so
// constraint templates, constraints and the audit behave as in a cluster, and every audit run is written as
// Gatekeeper writes it: <ExportDir>/<Channel>/<audit id>.txt under a lock, renamed to .log when complete.
package gatekeepertest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/gatekeepertest"

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// Version is the Gatekeeper release hack/test-servers.sh builds.
const Version = "v3.23.1"

// Where Gatekeeper's own objects live and what its export is called, as in its Helm chart.
const (
	Namespace      = "gatekeeper-system"
	ConnectionName = "audit-connection"
	Channel        = "audit-channel"
)

// ConnectionGVR is the resource of the Connection CR that configures the export.
var ConnectionGVR = schema.GroupVersionResource{Group: "connection.gatekeeper.sh", Version: "v1alpha1", Resource: "connections"}

// Binary returns the cached Gatekeeper binary, failing the test with how to get it when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	return cached(t, testproc.CachedBinary("gatekeeper", Version))
}

// CRDDir is the directory of the CRDs of Gatekeeper's Helm chart (charts/gatekeeper/crds in its module zip).
func CRDDir(t testing.TB) string {
	t.Helper()
	return cached(t, filepath.Join(files(), "crds"))
}

// ReleaseManifest is Gatekeeper's release manifest (deploy/gatekeeper.yaml in its module zip): its Namespace,
// CRDs, RBAC and the controller-manager and audit Deployments.
func ReleaseManifest(t testing.TB) string {
	t.Helper()
	return cached(t, filepath.Join(files(), "gatekeeper.yaml"))
}

func files() string { return filepath.Join(testproc.CacheDir(), "gatekeeper-"+Version) }

func cached(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Gatekeeper %s: %s not found: run hack/test-servers.sh (make test does)", Version, path)
	}
	return path
}

// Options of a Gatekeeper.
type Options struct {
	// AuditInterval is the time between the end of an audit run and the start of the next, in whole seconds;
	// 0 is 1s.
	AuditInterval time.Duration
	// MaxAuditResults is how many complete runs Gatekeeper keeps (0–5); 0 is 5.
	MaxAuditResults int
	// ExportDir is the Connection's path; empty for a directory of the test's.
	ExportDir string
}

// Gatekeeper is a running Gatekeeper.
type Gatekeeper struct {
	// ExportDir is the disk Connection's path; runs are written to ChannelDir below it.
	ExportDir string

	cs   kubernetes.Interface
	dc   dynamic.Interface
	proc *testproc.Proc
}

// Start installs Gatekeeper's CRDs in cluster, creates its namespace and the disk Connection, and runs
// Gatekeeper until the test ends (its log is shown if the test failed). Gatekeeper audits every constraint of the
// cluster: run one at a time per API server.
func Start(t testing.TB, cluster *apiserver.Cluster, opts Options) *Gatekeeper {
	t.Helper()
	bin := Binary(t)
	crds, err := filepath.Glob(filepath.Join(CRDDir(t), "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in %s: %v", CRDDir(t), err)
	}
	for _, p := range crds {
		cluster.InstallCRDs(t, p)
	}
	cs, dc := cluster.Clients(t)
	g := &Gatekeeper{ExportDir: opts.ExportDir, cs: cs, dc: dc}
	dir := t.TempDir()
	if g.ExportDir == "" {
		g.ExportDir = filepath.Join(dir, "export")
	}
	maxResults := opts.MaxAuditResults
	if maxResults == 0 {
		maxResults = 5
	}
	interval := max(int(opts.AuditInterval/time.Second), 1)

	cluster.CreateNamespace(t, Namespace)
	cluster.Apply(t, ConnectionGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ConnectionGVR.GroupVersion().String(), "kind": "Connection",
		"metadata": map[string]any{"name": ConnectionName, "namespace": Namespace},
		"spec": map[string]any{"driver": "disk", "config": map[string]any{
			"path": g.ExportDir, "maxAuditResults": int64(maxResults),
		}},
	}})

	cacheDir := filepath.Join(dir, "api-cache")
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(4)
	if err != nil {
		t.Fatal(err)
	}
	health := "127.0.0.1:" + strconv.Itoa(ports[0])
	logFile := filepath.Join(dir, "gatekeeper.log")
	p, err := testproc.Start("gatekeeper", testproc.Options{LogFile: logFile, Env: []string{"POD_NAMESPACE=" + Namespace}}, bin,
		"--kubeconfig="+cluster.Kubeconfig(t, apiserver.AdminToken),
		// No webhook: the audit, the status of templates and constraints, and the constraint CRDs.
		"--operation=audit", "--operation=status", "--operation=generate",
		"--disable-cert-rotation",
		// Out of cluster there is no Pod of Gatekeeper's own to name in the status objects.
		"--debug-use-fake-pod",
		"--enable-external-data=false",
		// No ValidatingAdmissionPolicy objects for templates and constraints: nothing here would use them.
		"--default-create-vap-for-templates=false",
		"--default-create-vap-binding-for-constraints=false",
		"--enable-violation-export=true",
		"--audit-connection="+ConnectionName,
		"--audit-channel="+Channel,
		"--audit-interval="+strconv.Itoa(interval),
		"--api-cache-dir="+cacheDir,
		"--health-addr="+health,
		"--metrics-addr=127.0.0.1:"+strconv.Itoa(ports[1]),
		"--port="+strconv.Itoa(ports[2]),
		// The Prometheus exporter listens on every address; a free port at least.
		"--prometheus-port="+strconv.Itoa(ports[3]),
		"--shutdown-delay=0",
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A paused Gatekeeper (Pause) would hold the signal until killed.
		_ = syscall.Kill(p.Pid(), syscall.SIGCONT)
		p.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("gatekeeper log (tail):\n%s", testproc.LogTail(logFile, 1<<16))
		}
	})
	g.proc = p
	g.waitFor(t, 90*time.Second, func() error { return testproc.GetOK(readyClient, "http://"+health+"/readyz", "") })
	return g
}

// waitFor polls check until it succeeds, failing the test with its last error and the end of Gatekeeper's log
// after timeout or once Gatekeeper has exited.
func (g *Gatekeeper) waitFor(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	if err := g.proc.WaitReady(timeout, check); err != nil {
		t.Fatal(err)
	}
}

// readyClient keeps no connection open, for packages that check for leaked goroutines.
var readyClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// ChannelDir is where Gatekeeper writes the audit runs.
func (g *Gatekeeper) ChannelDir() string { return filepath.Join(g.ExportDir, Channel) }

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// CreateNamespace creates namespace ns with the ServiceAccount "default" that Pods need: no controller manager
// runs to create it.
func (g *Gatekeeper) CreateNamespace(t testing.TB, ns string) {
	t.Helper()
	_, err := g.cs.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	_, err = g.cs.CoreV1().ServiceAccounts(ns).Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the default ServiceAccount of %s: %v", ns, err)
	}
}

// CreatePod creates a Pod with labels in ns (made with CreateNamespace). No scheduler or kubelet runs: it stays
// Pending, and the audit sees it all the same.
func (g *Gatekeeper) CreatePod(t testing.TB, ns, name string, labels map[string]string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
	}
	if _, err := g.cs.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
}

// LabelPod sets labels on a Pod (merged with those it has).
func (g *Gatekeeper) LabelPod(t testing.TB, ns, name string, labels map[string]string) {
	t.Helper()
	pod, err := g.cs.CoreV1().Pods(ns).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s/%s: %v", ns, name, err)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
	if _, err := g.cs.CoreV1().Pods(ns).Update(ctx(t), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("labelling pod %s/%s: %v", ns, name, err)
	}
}

// DeletePod deletes a Pod; with no kubelet it is gone at once.
func (g *Gatekeeper) DeletePod(t testing.TB, ns, name string) {
	t.Helper()
	zero := int64(0)
	err := g.cs.CoreV1().Pods(ns).Delete(ctx(t), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pod %s/%s: %v", ns, name, err)
	}
}
