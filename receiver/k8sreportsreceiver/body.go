// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// recordBody is a record's body: the source's own result as JSON. The records of a result about several
// subjects share the result's JSON, and each one's body is that JSON with only its own subject in
// `resources`, written when its batch is built: N subjects cost N bodies of one subject each, never N copies
// of all N.
type recordBody struct {
	text json.RawMessage
	// subject, when set, is this record's entry of the result's resources, whose value is text[at:end].
	subject json.RawMessage
	at, end int
}

func wholeBody(text json.RawMessage) recordBody { return recordBody{text: text} }

func (b recordBody) isZero() bool { return b.text == nil }

// size is the length of the body as appendTo writes it.
func (b recordBody) size() int {
	if b.subject == nil {
		return len(b.text)
	}
	return len(b.text) - (b.end - b.at) + len(b.subject) + len("[]")
}

func (b recordBody) appendTo(dst []byte) []byte {
	if b.subject == nil {
		return append(dst, b.text...)
	}
	dst = append(dst, b.text[:b.at]...)
	dst = append(dst, '[')
	dst = append(dst, b.subject...)
	dst = append(dst, ']')
	return append(dst, b.text[b.end:]...)
}

// bytes is the body as one JSON text.
func (b recordBody) bytes() []byte { return b.appendTo(make([]byte, 0, b.size())) }

// subjectBodies are the bodies of a result's records, one per entry of its resources, sharing text.
func subjectBodies(text json.RawMessage, entries []json.RawMessage) ([]recordBody, error) {
	at, end, err := resourcesSpan(text)
	if err != nil {
		return nil, err
	}
	out := make([]recordBody, len(entries))
	for i, e := range entries {
		out[i] = recordBody{text: text, subject: e, at: at, end: end}
	}
	return out, nil
}

var errNoResources = errors.New("the result's resources were not found again in its JSON")

// resourcesSpan finds the value of a result object's resources member, picked as encoding/json picks the
// member it decodes into a field: the last whose key matches case-insensitively.
func resourcesSpan(text []byte) (at, end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, errNoResources
	}
	at, end = -1, -1
	var value json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, err
		}
		if strings.EqualFold(key, "resources") {
			end = int(dec.InputOffset())
			at, value = end-len(v), v
		}
	}
	// The value must be the array the result was decoded from, byte for byte, or the bodies would be wrong.
	if at < 0 || !bytes.Equal(text[at:end], value) || !bytes.HasPrefix(value, []byte("[")) {
		return 0, 0, errNoResources
	}
	return at, end, nil
}
