package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"time"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

const sourceOPA = "opa"

// inputPath is where OPA events, and the others by default, carry their input.
var inputPath = []string{"input"}

// decodeOPA decodes one event of OPA's decision log. The body and input share raw's bytes where they can, so
// the caller must not reuse raw.
func decodeOPA(raw []byte) (decoded, error) {
	var buf [jsonStackMembers]jsonMember
	obj, ms, err := scanJSONEvent(raw, buf[:0])
	if err != nil {
		return decoded{}, err
	}
	return opaDecision(obj, ms)
}

func opaDecision(obj []byte, ms jsonMembers) (decoded, error) {
	d := policyresult.Decision{Source: sourceOPA, Kind: policyresult.DecisionKindQuery}
	var result, input, timestamp []byte
	for i := range ms {
		m := &ms[i]
		var err error
		switch string(m.name()) {
		case "decision_id":
			d.ID, err = stringField("decision_id", m.value)
		case "path":
			d.Policy, err = stringField("path", m.value)
		case "result":
			result = m.value
		case "input":
			input = m.value
		case "timestamp":
			timestamp = m.value
		}
		if err != nil {
			return decoded{}, err
		}
	}
	ts, err := opaTimestamp(timestamp)
	if err != nil {
		return decoded{}, err
	}
	d.Timestamp = ts
	d.Allowed, d.Messages = opaResult(result)
	if d.Allowed != nil && !*d.Allowed {
		d.Action = policyresult.ActionDeny
	}
	opaAdmission(input, &d)
	if d.ID == "" {
		// OPA always sends one; an event without is hashed so that redeliveries still collapse.
		d.ID = contentID(sourceOPA, d.Policy, string(timestamp), string(result), string(input))
	}
	body, input := withoutPath(obj, ms, inputPath)
	return decoded{decision: d, body: body, input: nonNullJSON(input)}, nil
}

// opaTimestamp reads OPA's RFC 3339 timestamp; OPA never sends a number, so neither is accepted.
func opaTimestamp(v []byte) (t time.Time, err error) {
	if len(v) > 0 && v[0] != '"' && string(v) != "null" {
		return t, fieldTypeError("timestamp", "a string", v)
	}
	return timeField("timestamp", v)
}

// nonNullJSON turns a JSON null into no value.
func nonNullJSON(v []byte) []byte {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// opaResult reads the allow/deny answer from a result, whose shape is the policy's own: a boolean, an object
// with allowed (OPA's authorization response shape) or allow, or an AdmissionReview as kube-mgmt policies
// return it. The messages come from the AdmissionReview's status or the common deny[msg] / violations sets.
func opaResult(result []byte) (*bool, []string) {
	if b, ok := jsonBool(result); ok {
		return &b, nil
	}
	var allowed, responseAllowed, allow []byte
	var statusMessage string
	var deny, violations []string
	c := jsonCursor{d: result}
	c.eachMember(func(name []byte) {
		switch string(name) {
		case "allowed":
			allowed = c.value()
		case "allow":
			allow = c.value()
		case "response":
			// A repeated key replaces the earlier value whole, as in encoding/json.
			responseAllowed, statusMessage = nil, ""
			c.eachMember(func(name []byte) {
				switch string(name) {
				case "allowed":
					responseAllowed = c.value()
				case "status":
					statusMessage = ""
					c.eachMember(func(name []byte) {
						if string(name) == "message" {
							statusMessage = c.str()
						}
					})
				}
			})
		case "deny":
			deny, _ = jsonStrings(c.value())
		case "violations":
			violations, _ = jsonStrings(c.value())
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
		if b, ok := jsonBool(v); ok {
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
	c := jsonCursor{d: input}
	c.eachMember(func(name []byte) {
		switch string(name) {
		case "kind":
			review = c.str() == "AdmissionReview"
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

func (r *admissionRequest) read(c *jsonCursor) {
	c.eachMember(func(name []byte) {
		switch string(name) {
		case "uid":
			r.uid = c.str()
		case "kind":
			r.group, r.version, r.kind = "", "", ""
			c.eachMember(func(name []byte) {
				switch string(name) {
				case "group":
					r.group = c.str()
				case "version":
					r.version = c.str()
				case "kind":
					r.kind = c.str()
				}
			})
		case "namespace":
			r.namespace = c.str()
		case "name":
			r.name = c.str()
		case "operation":
			r.operation = c.str()
		case "userInfo":
			r.user = ""
			c.eachMember(func(name []byte) {
				if string(name) == "username" {
					r.user = c.str()
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
func readObjectMeta(c *jsonCursor) (name, uid string) {
	c.eachMember(func(key []byte) {
		if string(key) != "metadata" {
			return
		}
		name, uid = "", ""
		c.eachMember(func(key []byte) {
			switch string(key) {
			case "name":
				name = c.str()
			case "uid":
				uid = c.str()
			}
		})
	})
	return name, uid
}
