// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"math"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const sourceOPA = "opa"

// inputPath is where OPA events, and the others by default, carry their input.
var inputPath = []string{"input"}

// OPA decodes one event of OPA's decision log. The body and input share raw's bytes where they can, so
// the caller must not reuse raw.
func OPA(raw []byte) (Event, error) {
	var buf [jsonscan.StackMembers]jsonscan.Member
	obj, ms, err := jsonscan.Object(raw, buf[:0])
	if err != nil {
		return Event{}, err
	}
	return opaDecision(obj, ms)
}

func opaDecision(obj []byte, ms jsonscan.Members) (Event, error) {
	e := readOPA(obj, ms)
	return e.Decode(ms)
}

// OPASummary is an OPA event as its scan leaves it for the decoder: where the values the decoder reads are, what
// the body and the input cost as pdata, and what to cut out of the event to make the body. An upload's scan
// keeps one per event until the whole upload is known to be valid, so it is small, of fixed size and holds no
// member list (112 bytes: at most 1.1 MB at the default max_events_per_request); the few events it cannot
// describe are scanned again when decoded.
type OPASummary struct {
	obj []byte
	// The values of the last member of each name, as encoding/json takes them; zero when absent.
	id, path, result, input, timestamp span
	// cut is what obj loses to become the body: the input member and a comma beside it; zero when obj has no
	// input and is the body.
	cut             span
	body, inputSize jsonscan.Size
	// rescan says the decoder needs the members: the event is no object or larger than spans reach, a
	// decision_id or path is no string (an error to report in member order), or the input is repeated or the
	// event has space between members (the body is then rebuilt from its members, as for other events).
	rescan bool
}

// span is a part of an event, as offsets that fit in int32: a span of an event is kept for every event of an
// upload.
type span struct{ start, end int32 }

// spanAt is the span [start, end) of an event that readOPA checked is at most math.MaxInt32 bytes long.
func spanAt(start, end int) span {
	return span{int32(start), int32(end)} //nolint:gosec // G115: the event is at most math.MaxInt32 bytes
}

func (s span) of(obj []byte) []byte {
	if s.end == 0 {
		return nil
	}
	return obj[s.start:s.end]
}

// readOPA describes event obj, whose members are ms, in one pass over the members.
func readOPA(obj []byte, ms jsonscan.Members) OPASummary {
	e := OPASummary{obj: obj}
	if len(obj) > math.MaxInt32 {
		e.body, _ = ms.SizeWithout("input")
		e.rescan = true
		return e
	}
	var body jsonscan.ObjectSize
	inputs, in := 0, 0
	// compact says obj has no space around its members, as OPA writes events: then cutting a member and a comma
	// beside it out of obj gives the same bytes as WithoutPath's rebuilding.
	compact, end := true, 0 // end of the opening brace, then of each member
	for i := range ms {
		m := &ms[i]
		compact = compact && m.Start == end+1
		end = m.End
		at := spanAt(m.End-len(m.Value), m.End)
		switch string(m.Name()) {
		case "decision_id":
			e.id = at
			e.rescan = e.rescan || !stringOrNull(m.Value)
		case "path":
			e.path = at
			e.rescan = e.rescan || !stringOrNull(m.Value)
		case "result":
			e.result = at
		case "input":
			e.input = at
			inputs, in = inputs+1, i
			continue
		case "timestamp":
			e.timestamp = at
		}
		body.Add(m)
	}
	e.body = body.Size()
	if inputs == 0 {
		return e
	}
	e.inputSize = ms[in].Size
	if inputs > 1 || !compact || end != len(obj)-1 {
		e.rescan = true
		return e
	}
	switch m := &ms[in]; {
	case in < len(ms)-1:
		e.cut = spanAt(m.Start, ms[in+1].Start)
	case in > 0:
		e.cut = spanAt(ms[in-1].End, m.End)
	default:
		e.cut = spanAt(m.Start, m.End)
	}
	return e
}

func stringOrNull(v []byte) bool { return v[0] == '"' || string(v) == "null" }

// Decode decodes the event; ms are its members, or nil when the caller has not kept them.
func (e *OPASummary) Decode(ms jsonscan.Members) (Event, error) {
	if e.rescan && ms == nil {
		return OPA(e.obj)
	}
	id, path, result := e.id.of(e.obj), e.path.of(e.obj), e.result.of(e.obj)
	input, timestamp := e.input.of(e.obj), e.timestamp.of(e.obj)
	var ev Event
	if e.rescan {
		for i := range ms {
			m := &ms[i]
			if name := string(m.Name()); name == "decision_id" || name == "path" {
				if _, err := stringField(name, m.Value); err != nil {
					return Event{}, err
				}
			}
		}
		id, _ = ms.Lookup("decision_id")
		path, _ = ms.Lookup("path")
		result, _ = ms.Lookup("result")
		input, _ = ms.Lookup("input")
		timestamp, _ = ms.Lookup("timestamp")
		ev = withoutInput(e.obj, ms, inputPath)
	} else {
		ev = Event{Body: e.obj, Input: nonNullJSON(input), BodySize: e.body, InputSize: e.inputSize}
		if e.cut != (span{}) {
			// Sized exactly: the body outlives the event's bytes, and a large input cut out must not stay
			// allocated as the body's spare capacity.
			body := make([]byte, 0, len(e.obj)-int(e.cut.end-e.cut.start))
			ev.Body = append(append(body, e.obj[:e.cut.start]...), e.obj[e.cut.end:]...)
		}
	}
	d := policyresult.Decision{Source: sourceOPA, Kind: policyresult.DecisionKindQuery}
	var err error
	if id != nil {
		d.ID, _ = stringField("decision_id", id)
	}
	if path != nil {
		d.Policy, _ = stringField("path", path)
	}
	if d.Timestamp, err = opaTimestamp(timestamp); err != nil {
		return Event{}, err
	}
	d.Allowed, d.Messages = opaResult(result)
	if d.Allowed != nil && !*d.Allowed {
		d.Action = policyresult.ActionDeny
	}
	opaAdmission(input, &d)
	if d.ID == "" {
		// OPA always sends one; an event without is hashed so that redeliveries still collapse.
		d.ID = policyresult.ContentDecisionID(sourceOPA, d.Policy, string(timestamp), string(result), string(input))
	}
	ev.Decision = d
	return ev, nil
}

// opaTimestamp reads OPA's RFC 3339 timestamp; OPA never sends a number, so neither is accepted.
func opaTimestamp(v []byte) (t time.Time, err error) {
	if len(v) > 0 && v[0] != '"' && string(v) != "null" {
		return t, fieldTypeError("timestamp", "a string", v)
	}
	return timeField("timestamp", v)
}

// opaResult reads the allow/deny answer from a result, whose shape is the policy's own: a boolean, an object
// with allowed (OPA's authorization response shape) or allow, or an AdmissionReview as kube-mgmt policies
// return it. The messages come from the AdmissionReview's status or the common deny[msg] / violations sets.
func opaResult(result []byte) (*bool, []string) {
	if b, ok := jsonscan.Bool(result); ok {
		return &b, nil
	}
	var allowed, responseAllowed, allow []byte
	var statusMessage string
	var deny, violations []string
	c := jsonscan.NewCursor(result)
	c.EachMember(func(name []byte) {
		switch string(name) {
		case "allowed":
			allowed = c.Value()
		case "allow":
			allow = c.Value()
		case "response":
			// A repeated key replaces the earlier value whole, as in encoding/json.
			responseAllowed, statusMessage = nil, ""
			c.EachMember(func(name []byte) {
				switch string(name) {
				case "allowed":
					responseAllowed = c.Value()
				case "status":
					statusMessage = ""
					c.EachMember(func(name []byte) {
						if string(name) == "message" {
							statusMessage = c.Str()
						}
					})
				}
			})
		case "deny":
			deny, _ = jsonscan.Strings(c.Value())
		case "violations":
			violations, _ = jsonscan.Strings(c.Value())
		}
	})
	var msgs []string
	switch {
	case statusMessage != "":
		msgs = []string{statusMessage}
	case len(deny) > 0:
		msgs = deny
	case len(violations) > 0:
		msgs = violations
	}
	for _, v := range [...][]byte{allowed, responseAllowed, allow} {
		if b, ok := jsonscan.Bool(v); ok {
			return &b, msgs
		}
	}
	return nil, msgs
}

// opaAdmission fills the admission fields when the input is an AdmissionReview (kube-mgmt and Gatekeeper-less
// admission controllers send the whole review, or only its request with a uid). The input is whatever the
// caller queried with, so fields of other types are not errors: they make the input something else.
func opaAdmission(input []byte, d *policyresult.Decision) {
	var review bool
	var r admissionRequest
	c := jsonscan.NewCursor(input)
	c.EachMember(func(name []byte) {
		switch string(name) {
		case "kind":
			review = c.Str() == "AdmissionReview"
		case "request":
			r = admissionRequest{}
			r.read(&c)
		}
	})
	if !review && r.uid == "" {
		return
	}
	d.Kind = policyresult.DecisionKindAdmission
	d.Operation = r.operation
	d.User = r.user
	d.Resource = policyresult.Resource{
		APIVersion: joinAPIVersion(r.group, r.version),
		Kind:       r.kind,
		Namespace:  r.namespace,
		Name:       firstNonEmpty(r.name, r.objectName, r.oldObjectName),
		UID:        firstNonEmpty(r.objectUID, r.oldObjectUID),
	}
}

// admissionRequest is what a decision needs of an AdmissionRequest. A DELETE has no object, only oldObject.
type admissionRequest struct {
	uid, group, version, kind, namespace, name, operation, user string
	objectName, objectUID, oldObjectName, oldObjectUID          string
}

func (r *admissionRequest) read(c *jsonscan.Cursor) {
	c.EachMember(func(name []byte) {
		switch string(name) {
		case "uid":
			r.uid = c.Str()
		case "kind":
			r.group, r.version, r.kind = "", "", ""
			c.EachMember(func(name []byte) {
				switch string(name) {
				case "group":
					r.group = c.Str()
				case "version":
					r.version = c.Str()
				case "kind":
					r.kind = c.Str()
				}
			})
		case "namespace":
			r.namespace = c.Str()
		case "name":
			r.name = c.Str()
		case "operation":
			r.operation = c.Str()
		case "userInfo":
			r.user = ""
			c.EachMember(func(name []byte) {
				if string(name) == "username" {
					r.user = c.Str()
				}
			})
		case "object":
			r.objectName, r.objectUID = readObjectMeta(c)
		case "oldObject":
			r.oldObjectName, r.oldObjectUID = readObjectMeta(c)
		}
	})
}

// readObjectMeta reads metadata.name and metadata.uid of a Kubernetes object.
func readObjectMeta(c *jsonscan.Cursor) (name, uid string) {
	c.EachMember(func(key []byte) {
		if string(key) != "metadata" {
			return
		}
		name, uid = "", ""
		c.EachMember(func(key []byte) {
			switch string(key) {
			case "name":
				name = c.Str()
			case "uid":
				uid = c.Str()
			}
		})
	})
	return name, uid
}
