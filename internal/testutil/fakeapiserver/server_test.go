// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package fakeapiserver

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	watchapi "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var (
	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	leases  = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

func widget(name, color string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": "ns", "labels": map[string]any{"color": color}}}
}

func config(s *Server) *rest.Config { return &rest.Config{Host: s.URL()} }

func TestDiscoveryListsWhatIsServed(t *testing.T) {
	s := Start(t)
	s.Serve(widgets, "Widget", true)
	dc, err := discovery.NewDiscoveryClientForConfig(config(s))
	require.NoError(t, err)
	list, err := dc.ServerResourcesForGroupVersion("example.com/v1")
	require.NoError(t, err)
	require.Len(t, list.APIResources, 1)
	assert.Equal(t, "widgets", list.APIResources[0].Name)
	assert.Equal(t, "Widget", list.APIResources[0].Kind)
	assert.True(t, list.APIResources[0].Namespaced)
	assert.Contains(t, list.APIResources[0].Verbs, "watch")

	s.Unserve(widgets)
	_, err = dc.ServerResourcesForGroupVersion("example.com/v1")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	s.FailDiscovery(leases.GroupVersion())
	s.Serve(leases, "Lease", true)
	_, err = dc.ServerResourcesForGroupVersion("coordination.k8s.io/v1")
	assert.True(t, apierrors.IsServiceUnavailable(err), "%v", err)
	s.RestoreDiscovery(leases.GroupVersion())
	_, err = dc.ServerResourcesForGroupVersion("coordination.k8s.io/v1")
	assert.NoError(t, err)
}

func TestListPagesAndSelectors(t *testing.T) {
	s := Start(t)
	s.Serve(widgets, "Widget", true)
	for _, n := range []string{"a", "b", "c"} {
		s.Apply(t, widgets, widget(n, "red"))
	}
	s.Apply(t, widgets, widget("d", "blue"))
	dc, err := dynamic.NewForConfig(config(s))
	require.NoError(t, err)
	ctx := context.Background()
	page, err := dc.Resource(widgets).List(ctx, metav1.ListOptions{Limit: 2, LabelSelector: "color=red"})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	assert.Equal(t, "4", page.GetResourceVersion())
	assert.Equal(t, "Widget", page.Items[0].GetKind())
	assert.Equal(t, "example.com/v1", page.Items[0].GetAPIVersion())
	page2, err := dc.Resource(widgets).List(ctx, metav1.ListOptions{Limit: 2, LabelSelector: "color=red", Continue: page.GetContinue()})
	require.NoError(t, err)
	require.Len(t, page2.Items, 1)
	assert.Equal(t, "c", page2.Items[0].GetName())
	assert.Empty(t, page2.GetContinue())

	s.Compact()
	_, err = dc.Resource(widgets).List(ctx, metav1.ListOptions{Limit: 2, Continue: page.GetContinue()})
	assert.True(t, apierrors.IsResourceExpired(err), "%v", err)

	s.Deny(widgets, "list")
	_, err = dc.Resource(widgets).Namespace("ns").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), `cannot list resource "widgets" in API group "example.com" in the namespace "ns"`)
	lists := 0
	for _, r := range s.Requests() {
		if r.Verb == "list" {
			lists++
			assert.Equal(t, widgets, r.GVR)
		}
	}
	assert.Equal(t, 4, lists)
}

func TestWatchReplaysFollowsAndExpires(t *testing.T) {
	s := Start(t)
	s.Serve(widgets, "Widget", true)
	rv := s.Apply(t, widgets, widget("a", "red"))
	rv2 := s.Apply(t, widgets, widget("a", "blue"))
	assert.Equal(t, rv2, s.Apply(t, widgets, widget("a", "blue")), "the same content is no change")
	dc, err := dynamic.NewForConfig(config(s))
	require.NoError(t, err)
	ctx := context.Background()
	w, err := dc.Resource(widgets).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, LabelSelector: "color=blue"})
	require.NoError(t, err)
	defer w.Stop()
	ev := <-w.ResultChan()
	assert.Equal(t, watchapi.Added, ev.Type, "an object that starts to match the selector is added")
	s.WaitWatch(t, widgets, 0)

	gone := s.Delete(widgets, "ns", "a")
	ev = <-w.ResultChan()
	assert.Equal(t, watchapi.Deleted, ev.Type)
	assert.Equal(t, gone, metaOf(t, ev).GetResourceVersion())

	bookmark := s.Bookmark(widgets)
	ev = <-w.ResultChan()
	assert.Equal(t, watchapi.Bookmark, ev.Type)
	assert.Equal(t, bookmark, metaOf(t, ev).GetResourceVersion())

	s.Compact()
	ev = <-w.ResultChan()
	require.Equal(t, watchapi.Error, ev.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)))
	_, open := <-w.ResultChan()
	assert.False(t, open, "the watch ends")

	w2, err := dc.Resource(widgets).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	require.NoError(t, err)
	defer w2.Stop()
	ev = <-w2.ResultChan()
	assert.Equal(t, watchapi.Error, ev.Type, "a watch from a compacted version expires at once")
}

func metaOf(t *testing.T, ev watchapi.Event) metav1.Object {
	t.Helper()
	m, err := apimeta.Accessor(ev.Object)
	require.NoError(t, err)
	return m
}

func TestLeasesForLeaderElection(t *testing.T) {
	s := Start(t)
	s.Serve(leases, "Lease", true)
	cs, err := kubernetes.NewForConfig(config(s))
	require.NoError(t, err)
	ctx := context.Background()
	c := cs.CoordinationV1().Leases("ns")
	_, err = c.Get(ctx, "l", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	holder := "a"
	l, err := c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Create(ctx, l, metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)

	holder = "b"
	l.Spec.HolderIdentity = &holder
	updated, err := c.Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", *updated.Spec.HolderIdentity)
	_, err = c.Update(ctx, l, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "an update from a stale version conflicts: %v", err)

	got, err := c.Get(ctx, "l", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, updated.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, "ns", got.Namespace)
	require.NoError(t, c.Delete(ctx, "l", metav1.DeleteOptions{}))
	var verbs []string
	for _, r := range s.Requests() {
		assert.Equal(t, leases, r.GVR)
		verbs = append(verbs, r.Verb+" "+http.StatusText(r.Status))
	}
	assert.Equal(t, []string{"get Not Found", "create Created", "create Conflict", "update OK", "update Conflict", "get OK", "delete OK"}, verbs)
}
