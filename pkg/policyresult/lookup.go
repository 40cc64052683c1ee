// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// EventName is the record's event: its EventName field, else the AttrEventName attribute, which is all that
// records of an older SDK, or rewritten by a transform, may carry.
func EventName(lr plog.LogRecord) string {
	if e := lr.EventName(); e != "" {
		return e
	}
	return eventNameAttribute(lr)
}

// eventNameAttribute is EventName's fallback, apart so that EventName stays small enough to be inlined: it is
// asked of every record on the hot paths.
//
//go:noinline
func eventNameAttribute(lr plog.LogRecord) string { return str(lr.Attributes(), AttrEventName) }

// Lookup finds name on the record (attrs), else on its resource (res): a record attribute wins, because
// it is the more specific of the two, as a processor that overrides a resource-wide value on some records
// relies on. A record attribute wins even when it is empty.
func Lookup(res, attrs pcommon.Map, name string) (pcommon.Value, bool) {
	if v, ok := attrs.Get(name); ok {
		return v, true
	}
	return res.Get(name)
}

// LookupString is Lookup's value as a string; "" when neither has it.
func LookupString(res, attrs pcommon.Map, name string) string {
	// Lookup's rule written out rather than called: a call per attribute per record costs on the hot paths.
	v, ok := attrs.Get(name)
	if !ok {
		if v, ok = res.Get(name); !ok {
			return ""
		}
	}
	if v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return v.AsString()
}

// LookupStrings fills values with LookupString of each of names; values must be at least as long.
func LookupStrings(res, attrs pcommon.Map, names, values []string) {
	for i, name := range names {
		values[i] = LookupString(res, attrs, name)
	}
}

// AllAttributes yields every attribute of a record as Attribute finds it: the resource attributes the record
// does not have, then the record's own. A name yielded that the record has (attrs.Get) is the record's.
func AllAttributes(res, attrs pcommon.Map) iter.Seq2[string, pcommon.Value] {
	return func(yield func(string, pcommon.Value) bool) {
		for k, v := range res.All() {
			if _, hidden := attrs.Get(k); hidden {
				continue
			}
			if !yield(k, v) {
				return
			}
		}
		for k, v := range attrs.All() {
			if !yield(k, v) {
				return
			}
		}
	}
}

func str(attrs pcommon.Map, name string) string {
	if v, ok := attrs.Get(name); ok {
		return v.AsString()
	}
	return ""
}
