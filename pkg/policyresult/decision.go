// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Decision attributes, in addition to the result attributes they share (source, policy, rule, result, message,
// subject resource).
const (
	AttrDecisionID         = "policy.decision.id"
	AttrDecisionAllowed    = "policy.decision.allowed"
	AttrDecisionAction     = "policy.decision.action"
	AttrDecisionMessages   = "policy.decision.messages"
	AttrDecisionOperation  = "policy.decision.operation"
	AttrDecisionUser       = "policy.decision.user"
	AttrDecisionKind       = "policy.decision.kind"
	AttrDecisionInputBytes = "policy.decision.input.size"
	AttrDecisionInputOmit  = "policy.decision.input.omitted"
)

// Action is how a policy engine enforces a violation.
type Action string

const (
	ActionDeny   Action = "deny"
	ActionDryRun Action = "dryrun"
	ActionWarn   Action = "warn"
	ActionNone   Action = ""
)

// ParseAction accepts the engines' spellings (Gatekeeper's "deny", "dryrun", "warn"; Kubernetes' "Deny",
// "Warn", "Audit"); anything else is ActionNone.
func ParseAction(s string) Action {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "deny":
		return ActionDeny
	case "dryrun", "dry-run", "audit":
		return ActionDryRun
	case "warn":
		return ActionWarn
	}
	return ActionNone
}

// DecisionKind says what produced a decision record.
const (
	// DecisionKindQuery is a policy query answered by an engine (an OPA decision).
	DecisionKindQuery = "query"
	// DecisionKindAdmission is a violation found while admitting a request.
	DecisionKindAdmission = "admission"
	// DecisionKindAudit is a violation found by an audit of existing objects.
	DecisionKindAudit = "audit"
)

// Decision is one decision of a policy engine: an OPA decision, or a Gatekeeper violation at admission or audit.
type Decision struct {
	Cluster string

	ID     string
	Kind   string // DecisionKind*
	Source string
	Policy string // the OPA query path, or the constraint kind
	Rule   string // the constraint name
	// Allowed is nil when the engine's answer is not an allow/deny decision (any other query result).
	Allowed   *bool
	Action    Action
	Messages  []string
	Operation string
	User      string
	Resource  Resource
	Timestamp time.Time
}

// Outcome maps a decision onto the result vocabulary: a denial fails, a violation that is only warned about or
// dry-run warns, an allowed request passes; a decision that is neither has no outcome.
func (d *Decision) Outcome() Outcome {
	switch {
	case d.Action == ActionWarn || d.Action == ActionDryRun:
		return OutcomeWarn
	case d.Allowed == nil && d.Action == ActionDeny:
		return OutcomeFail
	case d.Allowed == nil:
		return ""
	case *d.Allowed:
		return OutcomePass
	}
	return OutcomeFail
}

// WriteDecisionLogRecord writes d into lr as a policy.decision record. The body is the caller's: the engine's
// event, possibly without its input.
func WriteDecisionLogRecord(d *Decision, lr plog.LogRecord) {
	o := d.Outcome()
	attrs := writeEvent(lr, EventDecision, RecordSeverity(o, SeverityNone), d.Timestamp, 16)
	putNonEmpty(attrs, AttrDecisionID, d.ID)
	putNonEmpty(attrs, AttrDecisionKind, d.Kind)
	putNonEmpty(attrs, AttrSource, d.Source)
	putNonEmpty(attrs, AttrPolicy, d.Policy)
	putNonEmpty(attrs, AttrRule, d.Rule)
	putNonEmpty(attrs, AttrResult, string(o))
	if d.Allowed != nil {
		attrs.PutBool(AttrDecisionAllowed, *d.Allowed)
	}
	putNonEmpty(attrs, AttrDecisionAction, string(d.Action))
	if len(d.Messages) > 0 {
		attrs.PutStr(AttrMessage, d.Messages[0])
		putStrings(attrs, AttrDecisionMessages, d.Messages)
	}
	putNonEmpty(attrs, AttrDecisionOperation, d.Operation)
	putNonEmpty(attrs, AttrDecisionUser, d.User)
	putNonEmpty(attrs, AttrResourceAPIVersion, d.Resource.APIVersion)
	putNonEmpty(attrs, AttrResourceKind, d.Resource.Kind)
	putNonEmpty(attrs, AttrResourceNamespace, d.Resource.Namespace)
	putNonEmpty(attrs, AttrResourceName, d.Resource.Name)
	putNonEmpty(attrs, AttrResourceUID, d.Resource.UID)
}

// ErrNotDecision is returned by ReadDecisionLogRecord for records that are not policy.decision records.
var ErrNotDecision = fmt.Errorf("not a %s record", EventDecision)

// ReadDecisionLogRecord reads a decision back from a record written by WriteDecisionLogRecord.
func ReadDecisionLogRecord(res pcommon.Resource, lr plog.LogRecord) (Decision, error) {
	attrs := lr.Attributes()
	if event := EventName(lr); event != EventDecision {
		return Decision{}, fmt.Errorf("%w: event name %q", ErrNotDecision, event)
	}
	d := Decision{
		Cluster: str(res.Attributes(), AttrClusterName),
		ID:      str(attrs, AttrDecisionID), Kind: str(attrs, AttrDecisionKind),
		Source: str(attrs, AttrSource), Policy: str(attrs, AttrPolicy), Rule: str(attrs, AttrRule),
		Action:    Action(str(attrs, AttrDecisionAction)),
		Operation: str(attrs, AttrDecisionOperation), User: str(attrs, AttrDecisionUser),
		Resource: Resource{
			APIVersion: str(attrs, AttrResourceAPIVersion), Kind: str(attrs, AttrResourceKind),
			Namespace: str(attrs, AttrResourceNamespace), Name: str(attrs, AttrResourceName), UID: str(attrs, AttrResourceUID),
		},
	}
	if lr.Timestamp() != 0 {
		d.Timestamp = lr.Timestamp().AsTime()
	}
	if v, ok := attrs.Get(AttrDecisionAllowed); ok {
		if v.Type() != pcommon.ValueTypeBool {
			return Decision{}, fmt.Errorf("attribute %s: want a bool, got %s", AttrDecisionAllowed, v.Type())
		}
		allowed := v.Bool()
		d.Allowed = &allowed
	}
	if v, ok := attrs.Get(AttrDecisionMessages); ok && v.Type() == pcommon.ValueTypeSlice {
		for _, m := range v.Slice().All() {
			d.Messages = append(d.Messages, m.AsString())
		}
	}
	return d, nil
}
