// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
)

// TestBinaryRecordsEventsOnItsPod runs the collector as a Pod's ServiceAccount, with k8s_events and the RBAC of
// its README, and results_grpc pointed at a results server that is not running: a Warning Event about the
// exporter appears on the Pod; once the server runs, a ComponentRecovered Event.
func TestBinaryRecordsEventsOnItsPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	cluster, stop, err := apiserver.Start(t.TempDir())
	require.NoError(t, err)
	defer stop()
	const ns, name = "otelcol-policy", "otelcol-policy"
	cluster.CreateNamespace(t, ns)
	token := cluster.ServiceAccountToken(t, ns, name)
	readme := filepath.Join(collectortest.RepoRoot(t), "extension", "k8seventsextension", "README.md")
	cluster.ApplyRBAC(t, apiserver.MarkdownObjects(t, readme, "## RBAC"))
	pod := cluster.CreatePod(t, ns, name+"-0", name)

	// What `kubectl describe pod` shows, followed as it changes.
	admin, _ := cluster.Clients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := admin.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
	require.NoError(t, err)
	defer w.Stop()
	var seen []string
	next := func(what string, ok func(corev1.Event) bool) corev1.Event {
		t.Helper()
		for we := range w.ResultChan() {
			if ev, isEvent := we.Object.(*corev1.Event); isEvent {
				seen = append(seen, fmt.Sprintf("%s %s x%d: %s", ev.Type, ev.Reason, ev.Count, ev.Message))
				if ok(*ev) {
					return *ev
				}
			}
		}
		t.Fatalf("no %s Event before the watch ended (%v); seen:\n%s", what, ctx.Err(), strings.Join(seen, "\n"))
		return corev1.Event{}
	}

	grpcPort := collectortest.FreePort(t)
	endpoint := fmt.Sprintf("127.0.0.1:%d", grpcPort)
	dir := t.TempDir()
	extra := fmt.Sprintf(`
extensions:
  k8s_events:
    auth_type: kubeConfig
exporters:
  results_grpc:
    endpoint: %s
    tls:
      insecure: true
    retry_on_failure:
      initial_interval: 100ms
      max_interval: 1s
service:
  extensions: [health_check, file_storage, k8s_events]
  pipelines:
    logs:
      # Only what the test sends: the reports receiver would watch the cluster as a ServiceAccount that may not.
      receivers: [otlp]
      exporters: [durable_file, results_grpc, policy_metrics]
`, endpoint)
	env := []string{
		"KUBECONFIG=" + cluster.Kubeconfig(t, token),
		// The downward API stanza of the README.
		"K8S_POD_NAME=" + pod.Name, "K8S_POD_NAMESPACE=" + ns, "K8S_POD_UID=" + string(pod.UID),
	}
	c, p := start(t, dir, extra, env...)
	sendOTLP(t, p.HTTP, sampleResult("web-1"))

	component := "exporter results_grpc (pipeline logs)"
	warning := next("ComponentRecoverableError", func(ev corev1.Event) bool {
		return ev.Reason == "ComponentRecoverableError" && strings.HasPrefix(ev.Message, component+": ")
	})
	assert.Equal(t, corev1.EventTypeWarning, warning.Type)
	assert.Contains(t, warning.Message, component+": "+endpoint+": rpc error: code = Unavailable")
	assert.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}, warning.InvolvedObject)
	assert.Equal(t, corev1.EventSource{Component: "otelcol-policy", Host: pod.Name}, warning.Source)

	server := exec.Command(resultsServerBinary(t), "serve", "--listen", endpoint, "--db", "sqlite://"+filepath.Join(dir, "results.db"))
	server.Stderr = os.Stderr
	require.NoError(t, server.Start())
	defer func() {
		_ = server.Process.Signal(os.Interrupt)
		_ = server.Wait()
	}()
	recovered := next("ComponentRecovered", func(ev corev1.Event) bool { return ev.Reason == "ComponentRecovered" })
	assert.Equal(t, corev1.EventTypeNormal, recovered.Type)
	assert.Equal(t, component+" recovered", recovered.Message)
	assert.Equal(t, pod.UID, recovered.InvolvedObject.UID)
	c.Stop()
	t.Logf("Events on the Pod:\n%s", strings.Join(seen, "\n"))
}
