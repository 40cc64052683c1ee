// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStart proves the harness itself: a real API server that answers with RBAC applied.
func TestStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	c, stop, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cs, _ := c.Clients(t)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != KubernetesVersion {
		t.Errorf("server version %s, want %s", v.GitVersion, KubernetesVersion)
	}
	c.CreateNamespace(t, "harness")
	if _, err := cs.CoreV1().Namespaces().Get(ctx(t), "harness", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// The reader has no rights until granted.
	reader, err := newClientset(c, ReaderToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.CoreV1().Namespaces().List(ctx(t), metav1.ListOptions{}); err == nil {
		t.Error("the reader could list namespaces without a grant")
	}
	if _, err := os.Stat(c.Kubeconfig(t, AdminToken)); err != nil {
		t.Fatal(err)
	}
}
