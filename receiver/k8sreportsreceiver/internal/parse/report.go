// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package parse turns the report objects of each report family (PolicyReports, trivy-operator, Gatekeeper
// constraints, the Compliance Operator) into results of the model, counting each against the report's budget
// before building it.
package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Object is one report custom resource as read from the API server: the metadata the receiver needs
// and the raw JSON, which the kind's parser decodes. Whole objects are never kept beyond parsing.
type Object struct {
	GVR        schema.GroupVersionResource
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Raw        []byte
	// Partial is set by parsers of reports that list only some of their results (Gatekeeper caps
	// status.violations): results missing from a partial report are kept, not resolved.
	Partial bool
}

// ObjectMeta is the metadata of a report object that the receiver reads.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels"`
	OwnerReferences   []ObjectRef       `json:"ownerReferences"`
}

// ObjectRef is the shape shared by ownerReferences, PolicyReport scope and result resources.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

func (r ObjectRef) Resource() policyresult.Resource {
	return policyresult.Resource{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

// DecodeObject reads the metadata of one object and keeps its JSON for the parser.
func DecodeObject(gvr schema.GroupVersionResource, raw []byte) (*Object, error) {
	obj := &Object{GVR: gvr, Raw: raw}
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", gvr.Resource, err)
	}
	return obj, nil
}

func (o *Object) Report() policyresult.Report {
	return policyresult.Report{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}
}

// Result is one result of a report: the model's fields, and the source's own result for the record body.
type Result struct {
	policyresult.Result
	Body Body
}

// Func turns a report object into its results, counting them against budget before building them. An
// error means the object as a whole cannot be read, or (a *TooLargeError) fans out to more than budget; the
// caller names the object, counts it and keeps going.
type Func func(obj *Object, budget Budget) ([]Result, error)

// k8sTimestamp is the protobuf Timestamp shape PolicyReports use: {seconds, nanos}. Some writers put negative
// nanos in it, which time.Unix normalises.
type k8sTimestamp struct {
	Seconds int64 `json:"seconds"`
	Nanos   int64 `json:"nanos"`
}

func (t *k8sTimestamp) time() time.Time {
	if t == nil || (t.Seconds == 0 && t.Nanos == 0) {
		return time.Time{}
	}
	return time.Unix(t.Seconds, t.Nanos).UTC()
}
