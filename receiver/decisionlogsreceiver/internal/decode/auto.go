// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"strings"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
)

// errUnrecognised is the answer for events of neither format. It is an ErrNotDecision: a stream that mixes
// decisions with other log lines is normal.
const errUnrecognised = notDecisionError("unrecognised decision event: neither OPA (decision_id) nor Gatekeeper (eventType)")

// Auto tells OPA events from Gatekeeper violations by their keys, scanning the event only once.
func Auto(raw []byte) (Event, error) {
	var buf [jsonscan.StackMembers]jsonscan.Member
	obj, ms, err := jsonscan.Object(raw, buf[:0])
	if err != nil {
		return Event{}, err
	}
	var path, result, gatekeeper bool
	for i := range ms {
		m := &ms[i]
		switch string(m.Name()) {
		case "decision_id":
			return opaDecision(obj, ms)
		case "path":
			path = true
		case "result":
			result = true
		case "eventType", "event_type":
			// Gatekeeper logs far more than violations; only these are decisions.
			s, _ := jsonscan.String(m.Value)
			gatekeeper = gatekeeper || strings.HasPrefix(s, "violation")
		case "constraint_kind":
			gatekeeper = true
		}
	}
	switch {
	case path && result:
		return opaDecision(obj, ms)
	case gatekeeper:
		return gatekeeperDecision(obj, ms)
	}
	return Event{}, errUnrecognised
}
