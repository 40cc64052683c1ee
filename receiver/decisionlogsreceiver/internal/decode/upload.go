// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
)

// ErrTooManyEvents is SplitEvents' answer to an upload of more than its maximum of events.
var ErrTooManyEvents = errors.New("too many events")

// SplitEvents reads an upload: a JSON array of at most maxEvents events (OPA's format), or a single event
// object. It is the one scan of each event: it validates the event and reads, as it goes, what the decoder and
// the price need, so that a broken upload is refused whole before any of its events is delivered without a
// second pass over those that are not broken.
func SplitEvents(body []byte, maxEvents int) ([]OPASummary, error) {
	var buf [jsonscan.StackMembers]jsonscan.Member
	body = bytes.TrimSpace(body)
	i, end := 0, len(body)
	if i < end && body[i] == '{' {
		ev, j, _, err := scanOPAEvent(body, i, 0, buf[:0])
		if err != nil || j != end {
			return nil, fmt.Errorf("want a JSON array of decision events (or one event object): %v", errOr(err, "data after the object"))
		}
		return []OPASummary{ev}, nil
	}
	if i == end || body[i] != '[' {
		return nil, errors.New("want a JSON array of decision events")
	}
	var events []OPASummary
	ms := buf[:0]
	i = jsonscan.SkipSpace(body, i+1)
	if i < end && body[i] == ']' {
		i++
	} else {
		for {
			if len(events) == maxEvents {
				return nil, ErrTooManyEvents
			}
			ev, j, scanned, err := scanOPAEvent(body, i, 1, ms)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", len(events), err)
			}
			events, ms = append(events, ev), scanned[:0]
			i = jsonscan.SkipSpace(body, j)
			if i >= end {
				return nil, errors.New("unexpected end of the array")
			}
			if body[i] == ']' {
				i++
				break
			}
			if body[i] != ',' {
				return nil, fmt.Errorf("want ',' or ']' at byte %d", i)
			}
			i = jsonscan.SkipSpace(body, i+1)
		}
	}
	if jsonscan.SkipSpace(body, i) != end {
		return nil, errors.New("data after the array")
	}
	return events, nil
}

// scanOPAEvent scans the event at body[i] inside depth enclosing containers, listing its members into ms, and
// returns it, its end, and the members' buffer for the next event.
func scanOPAEvent(body []byte, i, depth int, ms jsonscan.Members) (OPASummary, int, jsonscan.Members, error) {
	if i >= len(body) || body[i] != '{' {
		// Not an event: the decoder says so when it comes to it.
		end, err := jsonscan.ScanValue(body, i, depth)
		if err != nil {
			return OPASummary{}, end, ms, err
		}
		return OPASummary{obj: body[i:end], rescan: true}, end, ms, nil
	}
	end, ms, err := jsonscan.ObjectAt(body, i, depth, ms)
	if err != nil {
		return OPASummary{}, end, ms, err
	}
	return readOPA(body[i:end], ms), end, ms, nil
}

func errOr(err error, msg string) any {
	if err != nil {
		return err
	}
	return msg
}
