// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import "go.opentelemetry.io/collector/pdata/plog"

// violationVersion is hashed first, so that a change of the fields yields new values instead of colliding with
// old ones.
const violationVersion = "violation/v1"

// ViolationHashes identify a violation that successive audit runs report again and again, so that a reader of
// audit snapshots can tell new, changed and resolved violations apart. The key is what the violation is about:
// kind, source, constraint (policy and rule), subject resource and messages (one constraint may report several
// violations of one resource, told apart only by their messages); the ID adds how it is enforced. Neither
// depends on the run's time, unlike the decision's ID.
func (d *Decision) ViolationHashes() Hashes {
	var buf [512]byte
	b := AppendFields(buf[:0], violationVersion, d.Kind, d.Source, d.Policy, d.Rule,
		d.Resource.APIVersion, d.Resource.Kind, d.Resource.Namespace, d.Resource.Name, d.Resource.UID)
	for _, m := range d.Messages {
		b = AppendField(b, m)
	}
	key := sum(b)
	return Hashes{Key: key, ID: sum(AppendField(b, string(d.Action)))}
}

// WriteDecisionState marks a policy.decision record written by WriteDecisionLogRecord as part of a change
// stream: StateNew or StateChanged for a violation an audit run found first or differently, StateResolved for
// one the next run no longer found. StateNone writes nothing.
func WriteDecisionState(lr plog.LogRecord, s State) {
	putNonEmpty(lr.Attributes(), AttrResultState, string(s))
}
