// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8seventsextension

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/extension/extensiontest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/internal/k8sclient"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
)

// cluster is the control plane shared by this package's integration tests (TestMain).
var cluster *apiserver.Cluster

// setupCluster runs before the tests (the generated TestMain calls it): it starts etcd and kube-apiserver,
// which die with the test process.
func setupCluster() {
	flag.Parse()
	if testing.Short() {
		return
	}
	c, err := apiserver.StartShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test control plane:", err)
		os.Exit(1)
	}
	cluster = c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// namespaces counts the namespaces collectorPod created: each run of a test (-count) has its own, since a
// namespace cannot be deleted without the controller manager.
var namespaces atomic.Int32

// collectorPod is the collector's namespace, ServiceAccount and Pod (an object only: the API server has no
// kubelet), with the Role and RoleBinding of the README moved to that namespace (as `kustomize edit set
// namespace` would), and a token of the ServiceAccount issued by the API server as the kubelet would mount it.
func collectorPod(t *testing.T) (*corev1.Pod, string) {
	t.Helper()
	const name = "otelcol-policy"
	ns := fmt.Sprintf("otelcol-policy-%d", namespaces.Add(1))
	cluster.CreateNamespace(t, ns)
	token := cluster.ServiceAccountToken(t, ns, name)
	rbac := apiserver.MarkdownObjects(t, "README.md", "## RBAC")
	for _, o := range rbac {
		require.Equal(t, "otelcol-policy", o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		o.SetNamespace(ns)
		if subjects, ok := o.Object["subjects"].([]any); ok {
			for _, s := range subjects {
				s.(map[string]any)["namespace"] = ns
			}
		}
	}
	cluster.ApplyRBAC(t, rbac)
	return cluster.CreatePod(t, ns, name+"-0", name), token
}

// eventWatch follows the Events of a namespace, as `kubectl get events -w` does.
type eventWatch struct {
	w    watch.Interface
	seen []corev1.Event
}

func watchEvents(t *testing.T, cs kubernetes.Interface, ns string) *eventWatch {
	t.Helper()
	w, err := cs.CoreV1().Events(ns).Watch(testCtx(t), metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return &eventWatch{w: w}
}

// next waits for an added or changed Event that satisfies ok.
func (e *eventWatch) next(t *testing.T, what string, ok func(corev1.Event) bool) corev1.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case we, open := <-e.w.ResultChan():
			require.True(t, open, "the watch ended while waiting for %s", what)
			ev, isEvent := we.Object.(*corev1.Event)
			if !isEvent {
				continue
			}
			e.seen = append(e.seen, *ev)
			if ok(*ev) {
				return *ev
			}
		case <-timeout:
			t.Fatalf("no Event %s within 30s; seen: %+v", what, e.seen)
		}
	}
}

func withReason(reason string, count int32) func(corev1.Event) bool {
	return func(ev corev1.Event) bool { return ev.Reason == reason && ev.Count == count }
}

func TestEventsOnThePodAgainstTheAPIServer(t *testing.T) {
	if cluster == nil {
		t.Skip("integration test: needs etcd and kube-apiserver (skipped with -short)")
	}
	admin, _ := cluster.Clients(t)
	pod, token := collectorPod(t)
	ns := pod.Namespace
	t.Setenv("KUBECONFIG", cluster.Kubeconfig(t, token))
	events := watchEvents(t, admin, ns)

	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sclient.AuthTypeKubeConfig
	cfg.PodName, cfg.PodNamespace, cfg.PodUID = pod.Name, ns, string(pod.UID)
	require.NoError(t, cfg.Validate())
	set := extensiontest.NewNopSettings(metadata.Type)
	set.BuildInfo.Command = "otelcol-policy" // the distribution's, the Events' source
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), nil))
	w := ext.(extensioncapabilities.ComponentStatusWatcher)

	// The collector's ordinary start records nothing; the exporter's first error does, and each identical report
	// after it bumps the count of that one Event (PATCH), as the kubelet's BackOff does.
	down := errors.New(`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:9: connect: connection refused"`)
	w.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusStarting))
	w.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusOK))
	for range 3 {
		w.Changed(exporterID, componentstatus.NewRecoverableErrorEvent(down))
	}
	first := events.next(t, "ComponentRecoverableError", withReason(ReasonRecoverableError, 1))
	third := events.next(t, "ComponentRecoverableError counted 3 times", withReason(ReasonRecoverableError, 3))
	assert.Equal(t, first.Name, third.Name, "one Event, counted")
	assert.Equal(t, corev1.EventTypeWarning, third.Type)
	assert.Equal(t, "exporter results_grpc/fleet (pipelines logs, logs/ship): "+down.Error(), third.Message)
	assert.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}, third.InvolvedObject)
	assert.Equal(t, corev1.EventSource{Component: "otelcol-policy", Host: pod.Name}, third.Source)

	w.Changed(exporterID, componentstatus.NewEvent(componentstatus.StatusOK))
	rec := events.next(t, "ComponentRecovered", withReason(ReasonRecovered, 1))
	assert.Equal(t, corev1.EventTypeNormal, rec.Type)
	assert.Equal(t, "exporter results_grpc/fleet (pipelines logs, logs/ship) recovered", rec.Message)
	assert.Equal(t, pod.UID, rec.InvolvedObject.UID)

	// Reported just before Shutdown: Shutdown returns only once they are written.
	w.Changed(extensionID, componentstatus.NewEvent(componentstatus.StatusStarting))
	w.Changed(extensionID, componentstatus.NewPermanentErrorEvent(errors.New("leases.coordination.k8s.io is forbidden")))
	fatalID := componentstatus.NewInstanceID(exporterID.ComponentID(), exporterID.Kind())
	w.Changed(fatalID, componentstatus.NewFatalErrorEvent(errors.New("listen tcp 127.0.0.1:4317: bind: address already in use")))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, ext.Shutdown(shutdownCtx))
	list, err := admin.CoreV1().Events(ns).List(testCtx(t), metav1.ListOptions{
		// What `kubectl describe pod` asks for.
		FieldSelector: "involvedObject.uid=" + string(pod.UID),
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, ev := range list.Items {
		got[ev.Reason] = fmt.Sprintf("%s %d %s", ev.Type, ev.Count, ev.Message)
	}
	assert.Equal(t, map[string]string{
		ReasonRecoverableError: "Warning 3 exporter results_grpc/fleet (pipelines logs, logs/ship): " + down.Error(),
		ReasonRecovered:        "Normal 1 exporter results_grpc/fleet (pipelines logs, logs/ship) recovered",
		ReasonPermanentError:   "Warning 1 extension k8s_leader_elector: leases.coordination.k8s.io is forbidden",
		ReasonFatalError:       "Warning 1 exporter results_grpc/fleet: listen tcp 127.0.0.1:4317: bind: address already in use",
	}, got)

	// After Shutdown, a status change records nothing.
	w.Changed(exporterID, componentstatus.NewRecoverableErrorEvent(errors.New("after shutdown")))
	list, err = admin.CoreV1().Events(ns).List(testCtx(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 4)

	t.Run("least privilege", func(t *testing.T) { testEventsIdentity(t, token, ns, pod) })
}

// testEventsIdentity checks that the ServiceAccount the extension ran as can record Events in its namespace
// and do nothing else.
func testEventsIdentity(t *testing.T, token, ns string, pod *corev1.Pod) {
	sa, err := kubernetes.NewForConfig(cluster.Config(token))
	require.NoError(t, err)
	ctx := testCtx(t)
	forbidden := func(what string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
	}
	_, err = sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	forbidden("list pods", err)
	_, err = sa.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	forbidden("get its own pod", err)
	_, err = sa.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	forbidden("list events", err)
	err = sa.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	forbidden("delete events", err)

	other := "elsewhere"
	cluster.CreateNamespace(t, other)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "forged-"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: other, Name: "victim"},
		Reason:         "Forged", Message: "forged", Type: corev1.EventTypeWarning,
	}
	_, err = sa.CoreV1().Events(other).Create(ctx, ev, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	forbidden("create events in another namespace", err)

	// Control: the same request in its own namespace is allowed, so the refusals above are RBAC's.
	ev.InvolvedObject.Namespace = ns
	_, err = sa.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	assert.NoError(t, err)
}
