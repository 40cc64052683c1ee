// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"encoding/json"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// decoded is one decision event read from a stream or a request: the decision for the record's attributes, the
// event's own JSON for its body, and the input (the AdmissionReview or query input) apart, because it is large,
// may be sensitive, and is included only when configured.
type decoded struct {
	decision policyresult.Decision
	// body is the event as JSON without its input (a JSON object).
	body json.RawMessage
	// input is the event's input as JSON, or nil when it has none.
	input json.RawMessage
	// bodySize and inputSize are what the body and the input cost as pdata, counted by the scan that validated
	// the event; zero when the decoder rewrote nested objects, and then the price measures them.
	bodySize, inputSize jsonscan.Size
	// withInput says the input goes into the record's body, as the receiver's price decided.
	withInput bool
	// state marks the record of a change stream (gatekeeper_export with audit_changes); StateNone otherwise.
	state policyresult.State
}

// decodeFunc decodes one JSON event. The error names the field that is wrong; the caller adds the line or
// request and counts it.
type decodeFunc func(raw []byte) (decoded, error)

// withoutInput is an event's body and input: event obj, whose members are ms, without the input at path. An
// input at the top level, which is where all but nested generic mappings keep it, is priced from the members'
// sizes.
func withoutInput(obj []byte, ms jsonscan.Members, path []string) decoded {
	if len(path) != 1 {
		body, input := jsonscan.WithoutPath(obj, ms, path)
		return decoded{body: body, input: nonNullJSON(input)}
	}
	bodySize, in := ms.SizeWithout(path[0])
	if in < 0 {
		// The common case of the Gatekeeper formats, which have no input: one pass over the members suffices.
		return decoded{body: obj, bodySize: bodySize}
	}
	body, input := jsonscan.WithoutPath(obj, ms, path)
	return decoded{body: body, input: nonNullJSON(input), bodySize: bodySize, inputSize: ms[in].Size}
}
