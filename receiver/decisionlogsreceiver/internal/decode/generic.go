// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// sourceGeneric is the source of generic decisions whose mapping names none.
const sourceGeneric = "generic"

// GenericMapping names, as dot-separated paths into each JSON object, where the decision fields are.
// Keys that contain dots cannot be named.
type GenericMapping struct {
	// ID, when unmapped or missing, is derived from the event's content, so that a redelivered event gets the
	// same ID; identical events without a timestamp get the same ID too.
	ID      string `mapstructure:"id"`
	Policy  string `mapstructure:"policy"`
	Rule    string `mapstructure:"rule"`
	Allowed string `mapstructure:"allowed"`
	Action  string `mapstructure:"action"`
	// Message holds a string or an array of strings.
	Message   string `mapstructure:"message"`
	Operation string `mapstructure:"operation"`
	User      string `mapstructure:"user"`
	// Timestamp holds an RFC 3339 string or a number of seconds (or milliseconds) since 1970.
	Timestamp string `mapstructure:"timestamp"`
	// Input is cut out of the body and kept apart like OPA's input; it defaults to "input", so that an input
	// is never in a body unless configured to be.
	Input string `mapstructure:"input"`
	// Source is a constant source name, not a path; it defaults to "generic".
	Source string `mapstructure:"source"`

	ResourceAPIVersion string `mapstructure:"resource_api_version"`
	ResourceKind       string `mapstructure:"resource_kind"`
	ResourceNamespace  string `mapstructure:"resource_namespace"`
	ResourceName       string `mapstructure:"resource_name"`
	ResourceUID        string `mapstructure:"resource_uid"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// genericField is a mapped path and the configuration key it came from.
type genericField struct {
	key  string
	path string
}

func (m *GenericMapping) fields() []genericField {
	return []genericField{
		{"id", m.ID}, {"policy", m.Policy}, {"rule", m.Rule}, {"allowed", m.Allowed}, {"action", m.Action},
		{"message", m.Message}, {"operation", m.Operation}, {"user", m.User}, {"timestamp", m.Timestamp},
		{"input", m.Input}, {"resource_api_version", m.ResourceAPIVersion}, {"resource_kind", m.ResourceKind},
		{"resource_namespace", m.ResourceNamespace}, {"resource_name", m.ResourceName},
		{"resource_uid", m.ResourceUID},
	}
}

// Validate checks that a mapping can identify a decision and that every path is well formed. The empty mapping
// is valid: configuration validation reaches every mapping, also when no listener uses it, so whether one is
// needed is for the listeners to say.
func (m GenericMapping) Validate() error {
	if m == (GenericMapping{}) {
		return nil
	}
	return m.validate()
}

func (m GenericMapping) validate() error {
	var errs []error
	if m.Policy == "" && m.ID == "" {
		errs = append(errs, errors.New("policy or id must be mapped"))
	}
	for _, f := range m.fields() {
		if f.path == "" {
			continue
		}
		for _, seg := range strings.Split(f.path, ".") {
			if seg == "" {
				errs = append(errs, fmt.Errorf("%s: path %q has an empty segment", f.key, f.path))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// genericPath is a mapped path, split once, and as configured, for error messages.
type genericPath struct {
	name string
	segs []string
}

func newGenericPath(p string) genericPath {
	if p == "" {
		return genericPath{}
	}
	return genericPath{name: p, segs: strings.Split(p, ".")}
}

func (p genericPath) value(ms jsonscan.Members) ([]byte, bool) { return ms.Path(p.segs) }

// str reads a string at p into dst; a missing or null value leaves dst alone.
func (p genericPath) str(ms jsonscan.Members, dst *string) error {
	v, ok := p.value(ms)
	if !ok {
		return nil
	}
	s, err := stringField(p.name, v)
	*dst = s
	return err
}

type genericDecoder struct {
	source                                        string
	id, policy, rule, allowed, action, message    genericPath
	operation, user, timestamp, input             genericPath
	resAPIVersion, resKind, resNamespace, resName genericPath
	resUID                                        genericPath
}

// NewGeneric decodes events with mapping m. A mapping that does not validate, the empty one included,
// yields a decoder that rejects every event with the reason, as configuration validation should have caught it.
func NewGeneric(m GenericMapping) Func {
	if err := m.validate(); err != nil {
		err = fmt.Errorf("invalid generic mapping: %w", err)
		return func([]byte) (Event, error) { return Event{}, err }
	}
	g := &genericDecoder{
		source: firstNonEmpty(m.Source, sourceGeneric),
		id:     newGenericPath(m.ID), policy: newGenericPath(m.Policy), rule: newGenericPath(m.Rule),
		allowed: newGenericPath(m.Allowed), action: newGenericPath(m.Action), message: newGenericPath(m.Message),
		operation: newGenericPath(m.Operation), user: newGenericPath(m.User),
		timestamp: newGenericPath(m.Timestamp), input: newGenericPath(firstNonEmpty(m.Input, "input")),
		resAPIVersion: newGenericPath(m.ResourceAPIVersion), resKind: newGenericPath(m.ResourceKind),
		resNamespace: newGenericPath(m.ResourceNamespace), resName: newGenericPath(m.ResourceName),
		resUID: newGenericPath(m.ResourceUID),
	}
	return g.decode
}

func (g *genericDecoder) decode(raw []byte) (Event, error) {
	var buf [jsonscan.StackMembers]jsonscan.Member
	obj, ms, err := jsonscan.Object(raw, buf[:0])
	if err != nil {
		return Event{}, err
	}
	d := policyresult.Decision{Source: g.source, Kind: policyresult.DecisionKindQuery}
	var action string
	for _, f := range []struct {
		p   genericPath
		dst *string
	}{
		{g.policy, &d.Policy}, {g.rule, &d.Rule}, {g.operation, &d.Operation}, {g.user, &d.User},
		{g.action, &action}, {g.resAPIVersion, &d.Resource.APIVersion}, {g.resKind, &d.Resource.Kind},
		{g.resNamespace, &d.Resource.Namespace}, {g.resName, &d.Resource.Name}, {g.resUID, &d.Resource.UID},
	} {
		if err := f.p.str(ms, f.dst); err != nil {
			return Event{}, err
		}
	}
	if v, ok := g.id.value(ms); ok {
		if d.ID, err = genericID(g.id.name, v); err != nil {
			return Event{}, err
		}
	}
	if v, ok := g.allowed.value(ms); ok {
		if d.Allowed, err = genericAllowed(g.allowed.name, v); err != nil {
			return Event{}, err
		}
	}
	if v, ok := g.message.value(ms); ok {
		if d.Messages, err = genericMessages(g.message.name, v); err != nil {
			return Event{}, err
		}
	}
	timestamp, _ := g.timestamp.value(ms)
	if d.Timestamp, err = timeField(g.timestamp.name, timestamp); err != nil {
		return Event{}, err
	}
	d.Action = policyresult.ParseAction(action)
	if d.Action == policyresult.ActionNone && d.Allowed != nil && !*d.Allowed {
		d.Action = policyresult.ActionDeny
	}
	ev := withoutInput(obj, ms, g.input.segs)
	if d.ID == "" {
		allowed := ""
		if d.Allowed != nil {
			allowed = strconv.FormatBool(*d.Allowed)
		}
		// Generic events may lack a resource, so user, operation, verdict and input join the fields that tell
		// decisions apart.
		when := ""
		if !d.Timestamp.IsZero() {
			when = d.Timestamp.Format(time.RFC3339Nano)
		}
		d.ID = policyresult.ContentDecisionID(d.Kind, when, d.Policy, d.Rule, d.Resource.APIVersion, d.Resource.Kind,
			d.Resource.Namespace, d.Resource.Name, strings.Join(d.Messages, "\n"), d.User, d.Operation, allowed,
			string(d.Action), string(ev.Input))
	}
	ev.Decision = d
	return ev, nil
}

// genericID accepts a string or, as some producers count their decisions, a number.
func genericID(name string, v []byte) (string, error) {
	if len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return string(v), nil
	}
	id, err := stringField(name, v)
	if err != nil {
		return "", fieldTypeError(name, "a string or a number", v)
	}
	return id, nil
}

// genericAllowed accepts a bool or the usual words for one.
func genericAllowed(name string, v []byte) (*bool, error) {
	if b, ok := jsonscan.Bool(v); ok {
		return &b, nil
	}
	if string(v) == "null" {
		return nil, nil
	}
	s, ok := jsonscan.String(v)
	if !ok {
		return nil, fieldTypeError(name, "a bool or a string", v)
	}
	var b bool
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "allow", "allowed":
		b = true
	case "false", "deny", "denied":
	default:
		return nil, fmt.Errorf("%s: want true, false, allow, deny, allowed or denied, got %s", name, quoteShort(s))
	}
	return &b, nil
}

// genericMessages accepts a string or an array of strings.
func genericMessages(name string, v []byte) ([]string, error) {
	if s, ok := jsonscan.String(v); ok {
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	if string(v) == "null" {
		return nil, nil
	}
	if ms, ok := jsonscan.Strings(v); ok {
		return ms, nil
	}
	return nil, fieldTypeError(name, "a string or an array of strings", v)
}
