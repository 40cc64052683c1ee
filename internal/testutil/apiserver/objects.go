// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package apiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Objects reads the YAML documents of a file.
func Objects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(string(doc)) == "---" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

// InstallCRDs creates the CustomResourceDefinitions in path and waits until each is served.
func (c *Cluster) InstallCRDs(t testing.TB, path string) {
	t.Helper()
	_, dc := c.Clients(t)
	crds := Objects(t, path)
	for _, crd := range crds {
		if _, err := dc.Resource(crdGVR).Create(ctx(t), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating CRD %s: %v", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		c.waitServed(t, crd, true)
	}
}

// DeleteCRDs deletes the CustomResourceDefinitions in path and waits until none is served.
func (c *Cluster) DeleteCRDs(t testing.TB, path string) {
	t.Helper()
	_, dc := c.Clients(t)
	crds := Objects(t, path)
	for _, crd := range crds {
		if err := dc.Resource(crdGVR).Delete(ctx(t), crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting CRD %s: %v", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		c.waitServed(t, crd, false)
	}
}

func (c *Cluster) waitServed(t testing.TB, crd *unstructured.Unstructured, served bool) {
	t.Helper()
	cs, _ := c.Clients(t)
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	deadline := time.Now().Add(60 * time.Second)
	for _, v := range versions {
		name, _ := v.(map[string]any)["name"].(string)
		for {
			list, err := cs.Discovery().ServerResourcesForGroupVersion(group + "/" + name)
			found := false
			if err == nil {
				for _, r := range list.APIResources {
					found = found || r.Name == plural
				}
			}
			if found == served {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s: served=%v not reached: %v", crd.GetName(), served, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// Apply creates or updates obj with server-side apply, as a controller writing a report would.
func (c *Cluster) Apply(t testing.TB, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	_, dc := c.Clients(t)
	_, err := dc.Resource(gvr).Namespace(obj.GetNamespace()).Apply(ctx(t), obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: "apiserver", Force: true})
	if err != nil {
		t.Fatalf("applying %s %s/%s: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
}

// ApplyStatus sets the status subresource of obj, as a controller reporting on an object would.
func (c *Cluster) ApplyStatus(t testing.TB, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	_, dc := c.Clients(t)
	_, err := dc.Resource(gvr).Namespace(obj.GetNamespace()).ApplyStatus(ctx(t), obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: "apiserver-status", Force: true})
	if err != nil {
		t.Fatalf("applying the status of %s %s/%s: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
}

// Delete deletes an object and ignores one that does not exist.
func (c *Cluster) Delete(t testing.TB, gvr schema.GroupVersionResource, namespace, name string) {
	t.Helper()
	_, dc := c.Clients(t)
	err := dc.Resource(gvr).Namespace(namespace).Delete(ctx(t), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
}

// CreateNamespace creates a namespace if it does not exist.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	cs, _ := c.Clients(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := cs.CoreV1().Namespaces().Create(ctx(t), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// Grant gives user the rules cluster-wide through a ClusterRole and ClusterRoleBinding named name, replacing
// an earlier grant of that name.
func (c *Cluster) Grant(t testing.TB, name, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	cs, _ := c.Clients(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx(t), role, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = cs.RbacV1().ClusterRoles().Create(ctx(t), role, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx(t), binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
