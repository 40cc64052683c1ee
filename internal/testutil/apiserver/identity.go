// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package apiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ServiceAccountToken creates the ServiceAccount name in namespace (which must exist) and returns a token the
// API server issued for it (TokenRequest), the token the kubelet mounts in a Pod: a client using it is the
// Pod's identity, authorized by RBAC as in a cluster.
func (c *Cluster) ServiceAccountToken(t testing.TB, namespace, name string) string {
	t.Helper()
	cs, _ := c.Clients(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx(t), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount %s/%s: %v", namespace, name, err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx(t), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tok.Status.Token
}

// CreatePod creates a Pod object that runs as serviceAccount. No kubelet runs it: the object exists for what
// refers to it, such as Events.
func (c *Cluster) CreatePod(t testing.TB, namespace, name, serviceAccount string) *corev1.Pod {
	t.Helper()
	cs, _ := c.Clients(t)
	automount := false
	pod, err := cs.CoreV1().Pods(namespace).Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName:           serviceAccount,
			AutomountServiceAccountToken: &automount,
			Containers:                   []corev1.Container{{Name: name, Image: "otelcol-policy:test"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Pod %s/%s: %v", namespace, name, err)
	}
	return pod
}

// ApplyRBAC applies Roles and RoleBindings, such as those a README documents (MarkdownObjects).
func (c *Cluster) ApplyRBAC(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		switch o.GetKind() {
		case "Role":
			c.Apply(t, rbacv1.SchemeGroupVersion.WithResource("roles"), o)
		case "RoleBinding":
			c.Apply(t, rbacv1.SchemeGroupVersion.WithResource("rolebindings"), o)
		default:
			t.Fatalf("ApplyRBAC: %s %s is not a Role or RoleBinding", o.GetKind(), o.GetName())
		}
	}
}

// MarkdownObjects reads the YAML documents of the first ```yaml block after the text after in a Markdown file:
// a test applies what the documentation tells users to apply.
func MarkdownObjects(t testing.TB, path, after string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), after)
	if ok {
		_, rest, ok = strings.Cut(rest, "```yaml\n")
	}
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("%s: no ```yaml block after %q", path, after)
	}
	file := filepath.Join(t.TempDir(), "block.yaml")
	if err := os.WriteFile(file, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return Objects(t, file)
}
