// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package decode reads the decision events of each producer (OPA's decision log, Gatekeeper's export messages
// and log lines, a generic mapping) into a decision, a body and an input, in one scan of each event.
package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"encoding/json"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Event is one decision event read from a stream or a request: the decision for the record's attributes, the
// event's own JSON for its body, and the input (the AdmissionReview or query input) apart, because it is large,
// may be sensitive, and is included only when configured.
type Event struct {
	Decision policyresult.Decision
	// Body is the event as JSON without its input (a JSON object).
	Body json.RawMessage
	// Input is the event's input as JSON, or nil when it has none.
	Input json.RawMessage
	// BodySize and InputSize are what the body and the input cost as pdata, counted by the scan that validated
	// the event; zero when the decoder rewrote nested objects, and then the price measures them.
	BodySize, InputSize jsonscan.Size
	// WithInput says the input goes into the record's body, as the receiver's price decided.
	WithInput bool
	// State marks the record of a change stream (gatekeeper_export with audit_changes); StateNone otherwise.
	State policyresult.State
}

// Func decodes one JSON event. The error names the field that is wrong; the caller adds the line or
// request and counts it.
type Func func(raw []byte) (Event, error)

// withoutInput is an event's body and input: event obj, whose members are ms, without the input at path. An
// input at the top level, which is where all but nested generic mappings keep it, is priced from the members'
// sizes.
func withoutInput(obj []byte, ms jsonscan.Members, path []string) Event {
	if len(path) != 1 {
		body, input := jsonscan.WithoutPath(obj, ms, path)
		return Event{Body: body, Input: nonNullJSON(input)}
	}
	bodySize, in := ms.SizeWithout(path[0])
	if in < 0 {
		// The common case of the Gatekeeper formats, which have no input: one pass over the members suffices.
		return Event{Body: obj, BodySize: bodySize}
	}
	body, input := jsonscan.WithoutPath(obj, ms, path)
	return Event{Body: body, Input: nonNullJSON(input), BodySize: bodySize, InputSize: ms[in].Size}
}
