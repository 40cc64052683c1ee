// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package fakeapiserver // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/fakeapiserver"

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// serveHTTP routes a request the way the API server's paths are laid out:
// /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME], and /api/v1/... for the core group.
func (s *Server) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()}
	var gv schema.GroupVersion
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		gv, rest = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		gv, rest = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	}
	s.mu.Lock()
	if len(rest) == 0 {
		s.serveDiscovery(rw, req, parts, gv)
		s.mu.Unlock()
		return
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		req.Namespace, rest = rest[1], rest[2:]
	}
	req.GVR = gv.WithResource(rest[0])
	if len(rest) > 1 {
		req.Name = rest[1]
	}
	req.Verb = verbOf(r, req)
	res, served := s.resources[req.GVR]
	switch {
	case len(rest) > 2:
		s.refuse(rw, req, http.StatusNotFound, "NotFound", "subresources are not served")
	case !served:
		s.refuse(rw, req, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case s.denied[req.GVR][req.Verb]:
		scope := "at the cluster scope"
		if req.Namespace != "" {
			scope = "in the namespace \"" + req.Namespace + "\""
		}
		s.refuse(rw, req, http.StatusForbidden, "Forbidden", fmt.Sprintf(
			"%s.%s is forbidden: User \"fake\" cannot %s resource \"%s\" in API group \"%s\" %s",
			req.GVR.Resource, req.GVR.Group, req.Verb, req.GVR.Resource, req.GVR.Group, scope))
	case req.Verb == "watch":
		s.serveWatch(rw, r, req, res) // unlocks
		return
	case req.Verb == "list":
		s.serveList(rw, req, res)
	default:
		s.serveObject(rw, r, req, res)
	}
	s.mu.Unlock()
}

func verbOf(r *http.Request, req Request) string {
	switch r.Method {
	case http.MethodGet:
		switch {
		case req.Name != "":
			return "get"
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			return "watch"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(r.Method)
}

// continueToken is what a list's continue token carries: where the next page starts, and the version of the
// list, which expires with compaction.
type continueToken struct {
	RV    uint64 `json:"rv"`
	After string `json:"after"`
}

// serveList answers one page of a list. The pages of one list share its resource version, which a watch then
// starts from.
func (s *Server) serveList(rw http.ResponseWriter, req Request, res *resource) {
	q := req.Query
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		s.refuse(rw, req, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	tok := continueToken{RV: s.rv}
	if c := q.Get("continue"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err == nil {
			err = json.Unmarshal(b, &tok)
		}
		if err != nil {
			s.refuse(rw, req, http.StatusBadRequest, "BadRequest", "invalid continue token")
			return
		}
		if tok.RV < s.compacted || s.expireContinue {
			s.expireContinue = false
			s.refuse(rw, req, http.StatusGone, "Expired",
				"The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
			return
		}
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	items := []map[string]any{}
	next := ""
	for _, obj := range res.sortedObjects() {
		at := nameKey(obj)
		if at <= tok.After || (req.Namespace != "" && nameOf(obj).namespace != req.Namespace) || !sel.Matches(labels.Set(labelsOf(obj))) {
			continue
		}
		if limit > 0 && len(items) == limit {
			b, _ := json.Marshal(continueToken{RV: tok.RV, After: nameKey(items[len(items)-1])})
			next = base64.RawURLEncoding.EncodeToString(b)
			break
		}
		items = append(items, obj)
	}
	s.reply(rw, req, http.StatusOK, map[string]any{
		"apiVersion": res.gvr.GroupVersion().String(), "kind": res.kind + "List",
		"metadata": map[string]any{"resourceVersion": strconv.FormatUint(tok.RV, 10), "continue": next},
		"items":    items,
	})
}

// nameKey orders objects as lists return them: by namespace, then name (NUL sorts before any name).
func nameKey(obj map[string]any) string {
	n := nameOf(obj)
	return n.namespace + "\x00" + n.name
}

// serveObject reads, creates, replaces or deletes one object; a replacement naming a resource version other
// than the current one is a conflict, which is what leader election relies on.
func (s *Server) serveObject(rw http.ResponseWriter, r *http.Request, req Request, res *resource) {
	key := objectName{req.Namespace, req.Name}
	cur := res.objects[key]
	notFound := func() {
		s.refuse(rw, req, http.StatusNotFound, "NotFound", fmt.Sprintf("%s.%s %q not found", req.GVR.Resource, req.GVR.Group, req.Name))
	}
	switch req.Verb {
	case "get":
		if cur == nil {
			notFound()
			return
		}
		s.reply(rw, req, http.StatusOK, cur)
	case "delete":
		if cur == nil {
			notFound()
			return
		}
		s.deleteLocked(res, key)
		s.reply(rw, req, http.StatusOK, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
	case "create", "update":
		obj, err := decodeBody(r)
		if err != nil {
			s.refuse(rw, req, http.StatusBadRequest, "BadRequest", "decoding the object: "+fmt.Sprint(err))
			return
		}
		m := meta(obj)
		if req.Namespace != "" {
			m["namespace"] = req.Namespace
		}
		name := nameOf(obj)
		switch {
		case req.Verb == "create" && res.objects[name] != nil:
			s.refuse(rw, req, http.StatusConflict, "AlreadyExists", fmt.Sprintf("%s.%s %q already exists", req.GVR.Resource, req.GVR.Group, name.name))
		case req.Verb == "update" && cur == nil:
			notFound()
		case req.Verb == "update" && m["resourceVersion"] != nil && m["resourceVersion"] != "" && m["resourceVersion"] != meta(cur)["resourceVersion"]:
			s.refuse(rw, req, http.StatusConflict, "Conflict", fmt.Sprintf(
				"Operation cannot be fulfilled on %s.%s %q: the object has been modified; please apply your changes to the latest version and try again",
				req.GVR.Resource, req.GVR.Group, req.Name))
		default:
			status := http.StatusOK
			if req.Verb == "create" {
				status = http.StatusCreated
			}
			s.reply(rw, req, status, s.putLocked(res, obj))
		}
	default:
		s.refuse(rw, req, http.StatusMethodNotAllowed, "MethodNotAllowed", "method not allowed")
	}
}

// serveDiscovery answers /api, /apis, /version and the resource lists of each group version.
func (s *Server) serveDiscovery(rw http.ResponseWriter, req Request, parts []string, gv schema.GroupVersion) {
	req.Verb = "discovery"
	switch {
	case len(parts) == 1 && parts[0] == "version":
		s.reply(rw, req, http.StatusOK, map[string]any{"major": "1", "minor": "36", "gitVersion": "v1.36.0-fakeapiserver"})
	case len(parts) == 1 && parts[0] == "api":
		s.reply(rw, req, http.StatusOK, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": s.http.Listener.Addr().String()}}})
	case len(parts) == 1 && parts[0] == "apis":
		s.reply(rw, req, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": s.groupsLocked()})
	case (len(parts) == 2 && parts[0] == "api" || len(parts) == 3 && parts[0] == "apis") && s.unavailable[gv]:
		s.refuse(rw, req, http.StatusServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request")
	case len(parts) == 2 && parts[0] == "api" || len(parts) == 3 && parts[0] == "apis":
		list := s.resourceListLocked(gv)
		if len(list) == 0 && gv.Group != "" {
			s.refuse(rw, req, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
			return
		}
		s.reply(rw, req, http.StatusOK, map[string]any{"kind": "APIResourceList", "apiVersion": "v1",
			"groupVersion": gv.String(), "resources": list})
	default:
		s.refuse(rw, req, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	}
}

func (s *Server) groupsLocked() []map[string]any {
	versions := map[string][]string{}
	var order []string
	for gvr := range s.resources {
		if gvr.Group == "" {
			continue
		}
		if _, ok := versions[gvr.Group]; !ok {
			order = append(order, gvr.Group)
		}
		if !contains(versions[gvr.Group], gvr.Version) {
			versions[gvr.Group] = append(versions[gvr.Group], gvr.Version)
		}
	}
	out := []map[string]any{}
	for _, g := range order {
		var vs []map[string]string
		for _, v := range versions[g] {
			vs = append(vs, map[string]string{"groupVersion": g + "/" + v, "version": v})
		}
		out = append(out, map[string]any{"name": g, "versions": vs, "preferredVersion": vs[0]})
	}
	return out
}

func (s *Server) resourceListLocked(gv schema.GroupVersion) []map[string]any {
	out := []map[string]any{}
	for gvr, res := range s.resources {
		if gvr.GroupVersion() == gv {
			out = append(out, map[string]any{
				"name": gvr.Resource, "singularName": strings.ToLower(res.kind), "namespaced": res.namespaced,
				"kind": res.kind, "verbs": []string{"create", "delete", "get", "list", "update", "watch"},
			})
		}
	}
	return out
}

// decodeBody reads the object a client sent: JSON, or protobuf, which client-go's typed clients send for
// built-in kinds such as Lease.
func decodeBody(r *http.Request) (map[string]any, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if strings.Contains(r.Header.Get("Content-Type"), "protobuf") {
		typed, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			return nil, err
		}
		return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	}
	var obj map[string]any
	return obj, json.Unmarshal(body, &obj)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Server) reply(rw http.ResponseWriter, req Request, status int, body any) {
	req.Status = status
	s.logLocked(req)
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(body)
}

// refuse answers with a Status object, which clients turn into their typed API errors.
func (s *Server) refuse(rw http.ResponseWriter, req Request, status int, reason, message string) {
	s.reply(rw, req, status, statusBody(status, reason, message))
}

func statusBody(code int, reason, message string) map[string]any {
	return map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code}
}
