// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultstate // import "github.com/otelcol-policy/otelcol-policy/internal/resultstate"

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Record is what the state needs of a policy.result record. Reading only these attributes, instead of the
// whole model, keeps counting cheap.
type Record struct {
	Key      policyresult.Hash
	Outcome  policyresult.Outcome
	Resolved bool
}

// ReadRecord reads a policy.result record of a resource with attributes res; ok is false for records of other
// events. A record without policy.result.key is keyed by its identity (policyresult.RecordKey). A result record
// the state cannot count (an invalid key, no policy, an outcome outside the vocabulary) is an error.
func ReadRecord(res pcommon.Map, lr plog.LogRecord) (r Record, ok bool, err error) {
	if policyresult.EventName(lr) != policyresult.EventResult {
		return r, false, nil
	}
	attrs := lr.Attributes()
	if r.Key, err = policyresult.RecordKey(res, attrs); err != nil {
		return r, true, err
	}
	if policyresult.State(str(attrs, policyresult.AttrResultState)) == policyresult.StateResolved {
		r.Resolved = true
		return r, true, nil
	}
	if v, found := attrs.Get(policyresult.AttrResult); found {
		if r.Outcome, err = policyresult.ParseOutcome(v.AsString()); err != nil {
			return r, true, fmt.Errorf("result %s: %w", r.Key, err)
		}
	}
	return r, true, nil
}

// Apply counts one record into t and returns how many keys it evicted; values is scratch space of at least
// len(names).
func (t *Tally) Apply(res pcommon.Map, lr plog.LogRecord, values []string) (int, error) {
	r, ok, err := ReadRecord(res, lr)
	if !ok || err != nil {
		return 0, err
	}
	if r.Resolved {
		t.Resolve(r.Key)
		return 0, nil
	}
	values = values[:len(t.names)]
	policyresult.LookupStrings(res, lr.Attributes(), t.names, values)
	return t.Set(r.Key, values, r.Outcome), nil
}

func str(attrs pcommon.Map, name string) string {
	if v, ok := attrs.Get(name); ok {
		return v.AsString()
	}
	return ""
}
