// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Body is a record's body: the source's own result as JSON. The records of a result about several
// subjects share the result's JSON, and each one's body is that JSON with only its own subject in
// `resources`, written when its batch is built: N subjects cost N bodies of one subject each, never N copies
// of all N.
type Body struct {
	Text json.RawMessage
	// Subject, when set, is this record's entry of the result's resources, whose value is text[at:end].
	Subject json.RawMessage
	at, end int
}

func WholeBody(text json.RawMessage) Body { return Body{Text: text} }

func (b Body) IsZero() bool { return b.Text == nil }

// Size is the length of the body as AppendTo writes it.
func (b Body) Size() int {
	if b.Subject == nil {
		return len(b.Text)
	}
	return len(b.Text) - (b.end - b.at) + len(b.Subject) + len("[]")
}

func (b Body) AppendTo(dst []byte) []byte {
	if b.Subject == nil {
		return append(dst, b.Text...)
	}
	dst = append(dst, b.Text[:b.at]...)
	dst = append(dst, '[')
	dst = append(dst, b.Subject...)
	dst = append(dst, ']')
	return append(dst, b.Text[b.end:]...)
}

// Bytes is the body as one JSON text.
func (b Body) Bytes() []byte { return b.AppendTo(make([]byte, 0, b.Size())) }

// subjectBodies are the bodies of a result's records, one per entry of its resources, sharing text.
func subjectBodies(text json.RawMessage, entries []json.RawMessage) ([]Body, error) {
	at, end, err := resourcesSpan(text)
	if err != nil {
		return nil, err
	}
	out := make([]Body, len(entries))
	for i, e := range entries {
		out[i] = Body{Text: text, Subject: e, at: at, end: end}
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
