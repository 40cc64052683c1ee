package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"encoding/json"

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
	// withInput says the input goes into the record's body, as the receiver's price decided.
	withInput bool
}

// decodeFunc decodes one JSON event. The error names the field that is wrong; the caller adds the line or
// request and counts it.
type decodeFunc func(raw []byte) (decoded, error)
