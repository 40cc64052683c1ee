// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"fmt"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const sourceGatekeeper = "gatekeeper"

// Gatekeeper decodes a Gatekeeper violation: an export message (camelCase, the pubsub and disk export
// backends) or one of Gatekeeper's JSON log lines for violations (snake_case, --log-denies and audit logs).
// Both spellings are read in one pass, as the keys do not overlap. The body shares raw's bytes where it can,
// so the caller must not reuse raw.
func Gatekeeper(raw []byte) (Event, error) {
	var buf [jsonscan.StackMembers]jsonscan.Member
	obj, ms, err := jsonscan.Object(raw, buf[:0])
	if err != nil {
		return Event{}, err
	}
	return gatekeeperDecision(obj, ms)
}

// gatekeeperEvent gathers the fields of both spellings before they are reconciled.
type gatekeeperEvent struct {
	eventType, process                               string
	id, auditID                                      string
	kind, name, message, msg                         string
	action                                           string
	actions                                          []string
	rGroup, rVersion, rKind, rNamespace, rName, rUID string
	operation                                        string
	users                                            [5]string // in order of preference
	timestamp, evaluationTimestamp, ts               []byte
}

func gatekeeperDecision(obj []byte, ms jsonscan.Members) (Event, error) {
	var g gatekeeperEvent
	for i := range ms {
		if err := g.read(&ms[i]); err != nil {
			return Event{}, err
		}
	}
	d := policyresult.Decision{Source: sourceGatekeeper}
	var err error
	if d.Kind, err = g.decisionKind(); err != nil {
		return Event{}, err
	}
	d.Policy, d.Rule = g.kind, g.name
	d.Action = policyresult.ParseAction(g.action)
	if d.Action == policyresult.ActionNone {
		// A scoped constraint says "scoped" and lists its actions; the strongest one is what it does.
		d.Action = strongestAction(g.actions)
	}
	if d.Kind == policyresult.DecisionKindAdmission {
		// The request was refused only under deny; warn and dryrun let it through.
		switch d.Action {
		case policyresult.ActionDeny:
			d.Allowed = new(bool)
		case policyresult.ActionWarn, policyresult.ActionDryRun:
			allowed := true
			d.Allowed = &allowed
		}
	}
	if msg := firstNonEmpty(g.message, g.msg); msg != "" {
		d.Messages = []string{msg}
	}
	d.Operation = g.operation
	d.User = firstNonEmpty(g.users[:]...)
	d.Resource = policyresult.Resource{
		APIVersion: joinAPIVersion(g.rGroup, g.rVersion),
		Kind:       g.rKind,
		Namespace:  g.rNamespace,
		Name:       g.rName,
		UID:        g.rUID,
	}
	if d.Timestamp, err = g.time(); err != nil {
		return Event{}, err
	}
	// The id of an audit message is the audit run's timestamp, shared by all its violations, so the ID is
	// derived from what tells violations apart. The audit log line's audit_id is the same timestamp, so a
	// violation read from both the export and the log gets the same ID.
	when := firstNonEmpty(g.id, g.auditID)
	if when == "" {
		when = string(firstPresent(g.timestamp, g.evaluationTimestamp, g.ts))
	}
	d.ID = policyresult.ContentDecisionID(d.Kind, when, d.Policy, d.Rule, g.rGroup, g.rKind, g.rNamespace, g.rName, firstNonEmpty(d.Messages...))
	ev := withoutInput(obj, ms, inputPath)
	ev.Decision = d
	return ev, nil
}

// read takes one member of either spelling.
func (g *gatekeeperEvent) read(m *jsonscan.Member) error {
	key := m.Name()
	var s *string
	switch string(key) {
	// Export messages.
	case "eventType":
		s = &g.eventType
	case "id":
		s = &g.id
	case "kind":
		s = &g.kind
	case "name":
		s = &g.name
	case "message":
		s = &g.message
	case "enforcementAction":
		s = &g.action
	case "enforcementActions":
		actions, ok := jsonscan.Strings(m.Value)
		if !ok && string(m.Value) != "null" {
			return fieldTypeError("enforcementActions", "an array of strings", m.Value)
		}
		g.actions = actions
	case "resourceGroup":
		s = &g.rGroup
	case "resourceAPIVersion":
		s = &g.rVersion
	case "resourceKind":
		s = &g.rKind
	case "resourceNamespace":
		s = &g.rNamespace
	case "resourceName":
		s = &g.rName
	case "resourceUID", "resourceUid":
		s = &g.rUID
	case "operation":
		s = &g.operation
	case "requestUsername":
		s = &g.users[0]
	case "requestUserName":
		s = &g.users[1]
	case "userInfo":
		if string(m.Value) != "null" && m.Value[0] != '{' {
			return fieldTypeError("userInfo", "an object", m.Value)
		}
		g.users[2] = ""
		if u, ok := jsonscan.Lookup(m.Value, "username"); ok {
			var err error
			if g.users[2], err = stringField("userInfo.username", u); err != nil {
				return err
			}
		}
	case "username":
		s = &g.users[3]
	case "timestamp":
		g.timestamp = m.Value
	case "evaluationTimestamp":
		g.evaluationTimestamp = m.Value
	// Log lines.
	case "event_type":
		s = &g.eventType
	case "process":
		s = &g.process
	case "audit_id":
		s = &g.auditID
	case "constraint_kind":
		s = &g.kind
	case "constraint_name":
		s = &g.name
	case "constraint_action":
		s = &g.action
	case "resource_group":
		s = &g.rGroup
	case "resource_api_version":
		s = &g.rVersion
	case "resource_kind":
		s = &g.rKind
	case "resource_namespace":
		s = &g.rNamespace
	case "resource_name":
		s = &g.rName
	case "request_username":
		s = &g.users[4]
	case "request_operation":
		s = &g.operation
	case "msg":
		s = &g.msg
	case "ts":
		g.ts = m.Value
	}
	if s == nil {
		return nil
	}
	v, ok := jsonscan.String(m.Value)
	if !ok && string(m.Value) != "null" {
		return fieldTypeError(string(key), "a string", m.Value)
	}
	*s = v
	return nil
}

// decisionKind tells audit from admission by the event type, or for log lines without one by the process.
func (g *gatekeeperEvent) decisionKind() (string, error) {
	switch g.eventType {
	case "violation_audited":
		return policyresult.DecisionKindAudit, nil
	case "violation_admission":
		return policyresult.DecisionKindAdmission, nil
	case "violation", "":
		switch g.process {
		case "audit":
			return policyresult.DecisionKindAudit, nil
		case "admission":
			return policyresult.DecisionKindAdmission, nil
		}
		if g.eventType == "violation" {
			return policyresult.DecisionKindAdmission, nil
		}
		return "", fmt.Errorf("eventType: missing")
	}
	if strings.HasPrefix(g.eventType, "violation") {
		return "", fmt.Errorf("eventType: unknown violation event type %s", quoteShort(g.eventType))
	}
	return "", notDecisionError(fmt.Sprintf("not a decision event: Gatekeeper event type %s is not a violation", quoteShort(g.eventType)))
}

// time is the evaluation time, or the log line's, or the audit run's, which is all an audit message carries.
func (g *gatekeeperEvent) time() (time.Time, error) {
	for _, f := range []struct {
		name string
		v    []byte
	}{{"timestamp", g.timestamp}, {"evaluationTimestamp", g.evaluationTimestamp}, {"ts", g.ts}} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return timeField(f.name, f.v)
		}
	}
	for _, id := range []string{g.id, g.auditID} {
		// An id is no timestamp field: one that is not a usable time is just an id.
		if t, err := time.Parse(time.RFC3339Nano, id); err == nil && recordTime(t) {
			return t.UTC(), nil
		}
	}
	return time.Time{}, nil
}

// strongestAction is deny over warn over dryrun.
func strongestAction(actions []string) policyresult.Action {
	rank := func(a policyresult.Action) int {
		switch a {
		case policyresult.ActionDeny:
			return 3
		case policyresult.ActionWarn:
			return 2
		case policyresult.ActionDryRun:
			return 1
		}
		return 0
	}
	best := policyresult.ActionNone
	for _, a := range actions {
		if pa := policyresult.ParseAction(a); rank(pa) > rank(best) {
			best = pa
		}
	}
	return best
}
