// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import "go.opentelemetry.io/collector/pdata/pcommon"

// maxDepth is how many levels of maps and arrays the walk enters, the body being the first. Bodies come from
// outside (jsonpdata accepts 10,000 levels), and no Kubernetes object in a decision or a report is nested
// anywhere near this deep; deeper parts are left as they are.
const maxDepth = 128

// strip finds the Kubernetes objects in log bodies and strips them. One strip serves one ConsumeLogs call: it
// counts for the self-metrics and holds the sort buffer, so concurrent calls share nothing.
type strip struct {
	remove   *removalTree
	sortKeys bool

	objects int64
	fields  int64
	sorting sortBuffer
}

func (s *strip) body(v pcommon.Value) {
	s.value(v, 1, false)
}

// value walks v, which is depth levels down; inObject tells that v is part of a found object, whose maps are
// sorted.
func (s *strip) value(v pcommon.Value, depth int, inObject bool) {
	if depth > maxDepth {
		return
	}
	switch v.Type() {
	case pcommon.ValueTypeMap:
		m := v.Map()
		if isObject(m) {
			s.objects++
			s.fields += int64(s.remove.removeFrom(m))
			inObject = true
		}
		if inObject && s.sortKeys {
			s.sorting.sortKeys(m)
		}
		// The walk goes on inside found objects: a List holds its items, a custom resource can embed objects.
		for _, e := range m.All() {
			s.value(e, depth+1, inObject)
		}
	case pcommon.ValueTypeSlice:
		for _, e := range v.Slice().All() {
			s.value(e, depth+1, inObject)
		}
	}
}

// isObject tells a Kubernetes object from the other maps of a body: the fields every object, and only an
// object, has. An AdmissionReview or a report result's resource reference has no metadata and is no object.
func isObject(m pcommon.Map) bool {
	return hasType(m, "apiVersion", pcommon.ValueTypeStr) &&
		hasType(m, "kind", pcommon.ValueTypeStr) &&
		hasType(m, "metadata", pcommon.ValueTypeMap)
}

func hasType(m pcommon.Map, key string, typ pcommon.ValueType) bool {
	v, ok := m.Get(key)
	return ok && v.Type() == typ
}
