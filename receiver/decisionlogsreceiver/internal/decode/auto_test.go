// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeAutoDetects(t *testing.T) {
	for _, tt := range []struct {
		file string
		as   Func
	}{
		{"opa_bool.json", OPA},
		{"opa_admission.json", OPA},
		{"opa_object.json", OPA},
		{"opa_erased_masked.json", OPA},
		{"opa_erased_input.json", OPA},
		{"gatekeeper_audit.json", Gatekeeper},
		{"gatekeeper_log_audit.json", Gatekeeper},
		{"gatekeeper_admission.json", Gatekeeper},
		{"gatekeeper_log_admission.json", Gatekeeper},
		{"gatekeeper_scoped.json", Gatekeeper},
	} {
		t.Run(tt.file, func(t *testing.T) {
			// As one NDJSON line.
			var line bytes.Buffer
			require.NoError(t, json.Compact(&line, fixture(t, tt.file)))
			want, err := tt.as(line.Bytes())
			require.NoError(t, err)
			got, err := Auto(line.Bytes())
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestDecodeAutoSignatures(t *testing.T) {
	for _, tt := range []struct{ event, source string }{
		{`{"path":"a/b","result":true}`, "opa"},
		{`{"decision_id":"d","eventType":"violation_audited"}`, "opa"},
		{`{"event_type":"violation","process":"admission"}`, "gatekeeper"},
		{`{"constraint_kind":"K","process":"audit"}`, "gatekeeper"},
	} {
		got, err := Auto([]byte(tt.event))
		require.NoError(t, err, tt.event)
		require.Equal(t, tt.source, got.Decision.Source, tt.event)
	}
}

func TestDecodeAutoErrors(t *testing.T) {
	const unrecognised = "unrecognised decision event: neither OPA (decision_id) nor Gatekeeper (eventType)"
	for _, tt := range []struct {
		in, want    string
		notDecision bool
	}{
		{`{"msg":"starting"}`, unrecognised, true},
		{`{"path":"a/b"}`, unrecognised, true},
		{`{"eventType":"audit_started"}`, unrecognised, true},
		{`{"event_type":"constraint_audited","constraint_kind":"K"}`, `not a decision event: Gatekeeper event type "constraint_audited" is not a violation`, true},
		{`{"decision_id":1}`, "decision_id: want a string, got number", false},
		{`{"eventType":"violation_audited","name":false}`, "name: want a string, got bool", false},
		{`not json`, `invalid JSON at byte 1: invalid character 'o' in literal null`, false},
		{`{"decision_id":"d"`, "invalid JSON at byte 18: unexpected end of input", false},
		{`[{"decision_id":"d"}]`, "want a JSON object, got array", false},
	} {
		_, err := Auto([]byte(tt.in))
		require.EqualError(t, err, tt.want, tt.in)
		require.Equal(t, tt.notDecision, errors.Is(err, ErrNotDecision), tt.in)
	}
}
