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

// ReadRecord reads a policy.result record; ok is false for records of other events. A result record the state
// cannot count (no valid key, an outcome outside the vocabulary) is an error.
func ReadRecord(lr plog.LogRecord) (r Record, ok bool, err error) {
	if policyresult.EventName(lr) != policyresult.EventResult {
		return r, false, nil
	}
	attrs := lr.Attributes()
	keyStr := str(attrs, policyresult.AttrResultKey)
	if r.Key, ok = policyresult.ParseHash(keyStr); !ok {
		return r, true, fmt.Errorf("attribute %s is %q, want 32 hexadecimal characters", policyresult.AttrResultKey, keyStr)
	}
	if policyresult.State(str(attrs, policyresult.AttrResultState)) == policyresult.StateResolved {
		r.Resolved = true
		return r, true, nil
	}
	if v, found := attrs.Get(policyresult.AttrResult); found {
		if r.Outcome, err = policyresult.ParseOutcome(v.AsString()); err != nil {
			return r, true, fmt.Errorf("result %s: %w", keyStr, err)
		}
	}
	return r, true, nil
}

// Apply counts one record into t and returns how many keys it evicted; values is scratch space of at least
// len(names).
func (t *Tally) Apply(res pcommon.Map, lr plog.LogRecord, values []string) (int, error) {
	r, ok, err := ReadRecord(lr)
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
