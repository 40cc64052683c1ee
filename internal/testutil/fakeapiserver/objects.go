// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package fakeapiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// event is one change of an object, kept to replay to watches that start from an older resource version.
type event struct {
	rv       uint64
	gvr      schema.GroupVersionResource
	typ      string
	obj, old map[string]any // old: the previous version of a modified object, to apply label selectors
}

// ApplyYAML creates or replaces the object written in YAML, as Apply does.
func (s *Server) ApplyYAML(t testing.TB, gvr schema.GroupVersionResource, yml string) string {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(yml))
	if err != nil {
		t.Fatalf("fakeapiserver: %v", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("fakeapiserver: %v", err)
	}
	return s.Apply(t, gvr, obj)
}

// Apply creates obj or replaces the object of the same namespace and name, and returns its resource version.
// Like the real API server, replacing an object with identical content changes nothing and sends no event.
func (s *Server) Apply(t testing.TB, gvr schema.GroupVersionResource, obj map[string]any) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.resources[gvr]
	if !ok {
		t.Fatalf("fakeapiserver: %s is not served", gvr)
	}
	obj = res.complete(deepCopy(obj))
	n := nameOf(obj)
	if old, exists := res.objects[n]; exists && sameContent(old, obj) {
		return meta(old)["resourceVersion"].(string)
	}
	return meta(s.putLocked(res, obj))["resourceVersion"].(string)
}

// Delete deletes an object and returns the resource version of its deletion; an object that does not exist
// is no error, and its version is "".
func (s *Server) Delete(gvr schema.GroupVersionResource, namespace, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.resources[gvr]
	if !ok {
		return ""
	}
	return s.deleteLocked(res, objectName{namespace, name})
}

// Get returns a copy of an object, or nil.
func (s *Server) Get(gvr schema.GroupVersionResource, namespace, name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.resources[gvr]
	if !ok || res.objects[objectName{namespace, name}] == nil {
		return nil
	}
	return deepCopy(res.objects[objectName{namespace, name}])
}

// Bookmark sends a BOOKMARK event at the current resource version to the watches of gvr that allow them, and
// returns that version.
func (s *Server) Bookmark(gvr schema.GroupVersionResource) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := strconv.FormatUint(s.rv, 10)
	res, ok := s.resources[gvr]
	if !ok {
		return rv
	}
	for w := range s.watches {
		if w.gvr == gvr && w.bookmarks {
			w.send("BOOKMARK", map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": res.kind,
				"metadata": map[string]any{"resourceVersion": rv},
			})
		}
	}
	return rv
}

// putLocked stores obj as the next version of its object, filling in what the API server sets, and sends the
// event.
func (s *Server) putLocked(res *resource, obj map[string]any) map[string]any {
	n := nameOf(obj)
	m := meta(obj)
	old := res.objects[n]
	s.rv++
	m["resourceVersion"] = strconv.FormatUint(s.rv, 10)
	if old != nil {
		m["uid"], m["creationTimestamp"] = meta(old)["uid"], meta(old)["creationTimestamp"]
	} else {
		m["uid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", s.rv)
		m["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	}
	res.objects[n] = res.complete(obj)
	typ := "ADDED"
	if old != nil {
		typ = "MODIFIED"
	}
	s.recordLocked(event{rv: s.rv, gvr: res.gvr, typ: typ, obj: obj, old: old})
	return obj
}

func (s *Server) deleteLocked(res *resource, n objectName) string {
	old, ok := res.objects[n]
	if !ok {
		return ""
	}
	delete(res.objects, n)
	s.rv++
	gone := deepCopy(old)
	meta(gone)["resourceVersion"] = strconv.FormatUint(s.rv, 10)
	s.recordLocked(event{rv: s.rv, gvr: res.gvr, typ: "DELETED", obj: gone})
	return strconv.FormatUint(s.rv, 10)
}

func (s *Server) recordLocked(ev event) {
	s.events = append(s.events, ev)
	for w := range s.watches {
		w.deliver(ev)
	}
}

// complete sets the type of an object written without it.
func (res *resource) complete(obj map[string]any) map[string]any {
	if _, ok := obj["apiVersion"]; !ok {
		obj["apiVersion"] = res.gvr.GroupVersion().String()
	}
	if _, ok := obj["kind"]; !ok {
		obj["kind"] = res.kind
	}
	return obj
}

// sortedObjects lists a resource's objects in the order lists return them: by namespace, then name.
func (res *resource) sortedObjects() []map[string]any {
	names := make([]objectName, 0, len(res.objects))
	for n := range res.objects {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if names[i].namespace != names[j].namespace {
			return names[i].namespace < names[j].namespace
		}
		return names[i].name < names[j].name
	})
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = res.objects[n]
	}
	return out
}

func meta(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		obj["metadata"] = m
	}
	return m
}

func nameOf(obj map[string]any) objectName {
	m := meta(obj)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	return objectName{ns, name}
}

func labelsOf(obj map[string]any) map[string]string {
	raw, _ := meta(obj)["labels"].(map[string]any)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k], _ = v.(string)
	}
	return out
}

// sameContent compares two versions of an object, leaving out what the API server sets.
func sameContent(a, b map[string]any) bool {
	strip := func(o map[string]any) map[string]any {
		c := deepCopy(o)
		m := meta(c)
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
			delete(m, k)
		}
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func deepCopy(obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
