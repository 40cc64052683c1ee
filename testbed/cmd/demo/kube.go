// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// adminToken authenticates as a member of system:masters (the token file the API server reads).
const adminToken = "demo-admin-token"

// crdDir holds the report CRDs the project's own tests install.
const crdDir = "receiver/k8sreportsreceiver/testdata/crds"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// startKube starts etcd and kube-apiserver as internal/testutil/apiserver does (same flags, service-account key, token
// file and certificate directory), but in the background, and waits until the API server is ready.
func startKube(e env, p ports) error {
	etcdBin := testproc.CachedBinary("etcd", apiserver.EtcdVersion)
	if !exists(etcdBin) {
		return fmt.Errorf("etcd not found at %s: run `make test-servers`", etcdBin)
	}
	apiserverBin := os.Getenv("KUBE_APISERVER_BIN")
	if apiserverBin == "" {
		apiserverBin = testproc.CachedBinary("kube-apiserver", apiserver.KubernetesVersion)
	}
	if !exists(apiserverBin) {
		return fmt.Errorf("kube-apiserver not found at %s: run `make test-servers`", apiserverBin)
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(p.EtcdClient)
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(p.EtcdPeer)
	if _, err := start(e, "etcd", nil, etcdBin,
		"--name", "demo",
		"--data-dir", e.path("etcd"),
		"--listen-client-urls", etcdClient, "--advertise-client-urls", etcdClient,
		"--listen-peer-urls", etcdPeer, "--initial-advertise-peer-urls", etcdPeer,
		"--initial-cluster", "demo="+etcdPeer,
		"--unsafe-no-fsync", // a throw-away store
	); err != nil {
		return err
	}
	k8s := e.path("k8s")
	if err := os.MkdirAll(k8s, 0o700); err != nil {
		return err
	}
	if err := apiserver.WriteServiceAccountKey(k8s); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(k8s, "tokens.csv"), []byte(adminToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	if _, err := start(e, "kube-apiserver", nil, apiserverBin,
		"--etcd-servers", etcdClient,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(p.APIServer),
		"--cert-dir", filepath.Join(k8s, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(k8s, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(k8s, "sa.key"),
		"--token-auth-file", filepath.Join(k8s, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.0.0.0/24",
	); err != nil {
		return err
	}
	if err := waitReady(context.Background(), e, "kube-apiserver", 120*time.Second, func() error {
		if procs, _ := runningProcs(e); !hasProc(procs, "etcd") {
			return fmt.Errorf("etcd exited:\n%s", logTail(e, "etcd", 2000))
		}
		return apiserver.ReadyURL(apiServerURL(p), adminToken)
	}); err != nil {
		return err
	}
	return writeKubeconfig(e, p)
}

func apiServerURL(p ports) string { return "https://127.0.0.1:" + strconv.Itoa(p.APIServer) }

func hasProc(procs []proc, name string) bool {
	for _, p := range procs {
		if p.name == name {
			return true
		}
	}
	return false
}

func caFile(e env) string { return e.path("k8s", "certs", "apiserver.crt") }

func writeKubeconfig(e env, p ports) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: demo
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: demo
  context: {cluster: demo, user: admin}
current-context: demo
`, apiServerURL(p), caFile(e), adminToken)
	return os.WriteFile(e.path("kubeconfig"), []byte(cfg), 0o600)
}

func restConfig(e env, p ports) *rest.Config {
	return &rest.Config{
		Host: apiServerURL(p), BearerToken: adminToken, QPS: 100, Burst: 200,
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile(e)},
	}
}

// objects reads the YAML documents of raw.
func objects(name string, raw []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

// installCRDs creates every CRD of crdDir and waits until each is served. It returns the kinds whose CRD has a
// status subresource.
func installCRDs(ctx context.Context, e env, p ports) (map[schema.GroupKind]bool, int, error) {
	dc, err := dynamic.NewForConfig(restConfig(e, p))
	if err != nil {
		return nil, 0, err
	}
	paths, err := filepath.Glob(filepath.Join(e.root, crdDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		return nil, 0, fmt.Errorf("no CRDs in %s", crdDir)
	}
	sort.Strings(paths)
	withStatus := map[schema.GroupKind]bool{}
	var crds []*unstructured.Unstructured
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, err
		}
		objs, err := objects(path, raw)
		if err != nil {
			return nil, 0, err
		}
		for _, crd := range objs {
			if crd.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if _, err := dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, 0, fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
			}
			crds = append(crds, crd)
			group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			for _, v := range versions {
				if _, ok, _ := unstructured.NestedMap(v.(map[string]any), "subresources", "status"); ok {
					withStatus[schema.GroupKind{Group: group, Kind: kind}] = true
				}
			}
		}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(restConfig(e, p))
	if err != nil {
		return nil, 0, err
	}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			name, _ := v.(map[string]any)["name"].(string)
			if err := waitServed(ctx, disc, group+"/"+name, plural); err != nil {
				return nil, 0, fmt.Errorf("CRD %s: %w", crd.GetName(), err)
			}
		}
	}
	return withStatus, len(crds), nil
}

func waitServed(ctx context.Context, disc discovery.DiscoveryInterface, gv, plural string) error {
	for {
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err == nil {
			for _, r := range list.APIResources {
				if r.Name == plural {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s not served: %w", gv, plural, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// applySamples creates the sample objects (namespaces and reports) with server-side apply; an object with a
// status whose CRD has a status subresource gets it through the subresource, as its controller would write it.
// It returns the number of objects per kind.
func applySamples(ctx context.Context, e env, p ports, withStatus map[schema.GroupKind]bool) (map[string]int, error) {
	cfg := restConfig(e, p)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(disc)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	counts := map[string]int{}
	err = fs.WalkDir(files, "samples", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := objects(path, raw)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", path, gvk, err)
			}
			ri := dc.Resource(m.Resource).Namespace(obj.GetNamespace())
			opts := metav1.ApplyOptions{FieldManager: "otelcol-policy-demo", Force: true}
			if _, err := ri.Apply(ctx, obj.GetName(), obj, opts); err != nil {
				return fmt.Errorf("%s: applying %s %s: %w", path, gvk.Kind, name(obj), err)
			}
			if _, ok := obj.Object["status"]; ok && withStatus[gvk.GroupKind()] {
				opts.FieldManager = "otelcol-policy-demo-status"
				if _, err := ri.ApplyStatus(ctx, obj.GetName(), obj, opts); err != nil {
					return fmt.Errorf("%s: applying the status of %s %s: %w", path, gvk.Kind, name(obj), err)
				}
			}
			counts[gvk.Kind]++
		}
		return nil
	})
	return counts, err
}

func name(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// countsLine formats kind counts as "2 PolicyReport, 1 Report".
func countsLine(counts map[string]int) string {
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}
