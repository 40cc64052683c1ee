// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// The seed corpora are in testdata/fuzz/<FuzzName>: the fixtures, and edge cases (deep nesting, invalid UTF-8,
// huge numbers, escaped and repeated keys, truncations). Run one with
//
//	go test -run '^$' -fuzz FuzzDecodeOPA -fuzztime 30s

func FuzzDecodeOPA(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := OPA(raw)
		checkDecoded(t, raw, got, err, inputPath)
		if err == nil {
			checkOPAReference(t, raw, got.Decision)
			// Cut or rebuilt, the body is the same bytes.
			obj, ms, _ := jsonscan.Object(raw, nil)
			want, _ := jsonscan.WithoutPath(obj, ms, inputPath)
			require.Equal(t, string(want), string(got.Body))
		}
		// An upload's scan keeps only a summary of each event, and decodes it as OPA does.
		events, splitErr := SplitEvents(append(append([]byte("["), raw...), ']'), 1)
		if splitErr != nil || len(events) != 1 {
			if err == nil {
				// Only the array's own level can make a decodable event too deep for an upload.
				require.ErrorContains(t, splitErr, "exceeded max depth")
			}
			return
		}
		fromUpload, uploadErr := events[0].Decode(nil)
		if err != nil {
			require.EqualError(t, uploadErr, err.Error())
			return
		}
		require.NoError(t, uploadErr)
		require.Equal(t, got, fromUpload)
	})
}

// checkOPAReference decodes the OPA mapping again the slow way, with encoding/json, where repeated keys also
// take the last value, to check the fields the cursor walks for.
func checkOPAReference(t *testing.T, raw []byte, got policyresult.Decision) {
	event := unmarshalUseNumber(t, raw).(map[string]any)
	str := func(m any, path ...string) string {
		for _, k := range path {
			o, _ := m.(map[string]any)
			m = o[k]
		}
		s, _ := m.(string)
		return s
	}
	var want policyresult.Decision
	result := event["result"]
	if b, ok := result.(bool); ok {
		want.Allowed = &b
	}
	if r, ok := result.(map[string]any); ok {
		response, _ := r["response"].(map[string]any)
		for _, v := range []any{r["allowed"], response["allowed"], r["allow"]} {
			if b, ok := v.(bool); ok {
				want.Allowed = &b
				break
			}
		}
		stringsOf := func(v any) []string {
			a, ok := v.([]any)
			var out []string
			for _, e := range a {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				out = append(out, s)
			}
			if !ok {
				return nil
			}
			return out
		}
		if m := str(response, "status", "message"); m != "" {
			want.Messages = []string{m}
		} else if d := stringsOf(r["deny"]); len(d) > 0 {
			want.Messages = d
		} else if v := stringsOf(r["violations"]); len(v) > 0 {
			want.Messages = v
		}
	}
	input := event["input"]
	inputObject, _ := input.(map[string]any)
	request, _ := inputObject["request"].(map[string]any)
	want.Kind = policyresult.DecisionKindQuery
	if str(input, "kind") == "AdmissionReview" || str(request, "uid") != "" {
		want.Kind = policyresult.DecisionKindAdmission
		want.Operation = str(request, "operation")
		want.User = str(request, "userInfo", "username")
		want.Resource = policyresult.Resource{
			APIVersion: joinAPIVersion(str(request, "kind", "group"), str(request, "kind", "version")),
			Kind:       str(request, "kind", "kind"),
			Namespace:  str(request, "namespace"),
			Name:       firstNonEmpty(str(request, "name"), str(request, "object", "metadata", "name"), str(request, "oldObject", "metadata", "name")),
			UID:        firstNonEmpty(str(request, "object", "metadata", "uid"), str(request, "oldObject", "metadata", "uid")),
		}
	}
	require.Equal(t, want.Allowed, got.Allowed)
	require.Equal(t, want.Messages, got.Messages)
	require.Equal(t, want.Kind, got.Kind)
	require.Equal(t, want.Operation, got.Operation)
	require.Equal(t, want.User, got.User)
	require.Equal(t, want.Resource, got.Resource)
	require.Equal(t, str(event, "path"), got.Policy)
	if id := str(event, "decision_id"); id != "" {
		require.Equal(t, id, got.ID)
	}
}

func FuzzDecodeGatekeeper(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Gatekeeper(raw)
		checkDecoded(t, raw, got, err, inputPath)
	})
}

func FuzzDecodeGeneric(f *testing.F) {
	nested := GenericMapping{
		Policy: "decision.policy", Allowed: "decision.allowed", Message: "decision.message", Timestamp: "ts",
		User: "ctx.caller", Input: "ctx.input",
	}
	byDefault := NewGeneric(GenericMapping{ID: "id", Policy: "policy"})
	byPayments, byNested := NewGeneric(paymentsMapping), NewGeneric(nested)
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := byDefault(raw)
		checkDecoded(t, raw, got, err, inputPath)
		got, err = byPayments(raw)
		checkDecoded(t, raw, got, err, []string{"request"})
		got, err = byNested(raw)
		checkDecoded(t, raw, got, err, []string{"ctx", "input"})
	})
}

func FuzzDecodeAuto(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Auto(raw)
		checkDecoded(t, raw, got, err, inputPath)

		// The OPA readers trust that scanning validated their input; on anything else they may read nonsense,
		// but must neither hang nor panic. (jsonscan's FuzzObject holds the scanner and its walkers to the same.)
		opaResult(raw)
		var d policyresult.Decision
		opaAdmission(raw, &d)
	})
}

// checkDecoded holds every decoder to its contract: no panic (the fuzzer catches those), and on success a body
// that is the event, as a JSON object, minus what is at inputPath, which is the input.
func checkDecoded(t *testing.T, raw []byte, got Event, err error, inputPath []string) {
	t.Helper()
	if err != nil {
		require.NotEmpty(t, err.Error())
		return
	}
	require.True(t, json.Valid(got.Body), "body %q", got.Body)
	body := unmarshalUseNumber(t, got.Body).(map[string]any)
	event := unmarshalUseNumber(t, raw).(map[string]any)
	if _, ok := body[inputPath[0]]; ok && len(inputPath) == 1 {
		t.Fatalf("the body has a top-level %q: %q", inputPath[0], got.Body)
	}
	// What was removed is what the input is, and nothing else.
	var wantInput any
	parent := event
	for i, seg := range inputPath {
		v, ok := parent[seg]
		if !ok {
			break
		}
		if i == len(inputPath)-1 {
			wantInput = v
			delete(parent, seg)
			break
		}
		if parent, ok = v.(map[string]any); !ok {
			break
		}
	}
	require.Equal(t, event, body)
	if got.Input == nil {
		require.Nil(t, wantInput)
	} else {
		require.True(t, json.Valid(got.Input), "input %q", got.Input)
		require.Equal(t, wantInput, unmarshalUseNumber(t, got.Input))
	}
	d := got.Decision
	for _, s := range append([]string{d.ID, d.Kind, d.Source, d.Policy, d.Rule, string(d.Action), d.Operation, d.User,
		d.Resource.APIVersion, d.Resource.Kind, d.Resource.Namespace, d.Resource.Name, d.Resource.UID}, d.Messages...) {
		require.True(t, utf8.ValidString(s), "%q is not UTF-8", s)
	}
	require.NotEmpty(t, d.ID)
	// The sizes the scan counted are what measuring the body and the input gives, where the decoder kept them.
	if got.BodySize != (jsonscan.Size{}) {
		require.Equal(t, jsonscan.Measure(got.Body, len(got.Body)), got.BodySize)
	}
	if got.Input != nil && got.InputSize != (jsonscan.Size{}) {
		require.Equal(t, jsonscan.Measure(got.Input, len(got.Input)), got.InputSize)
	}
	if !d.Timestamp.IsZero() {
		require.Equal(t, d.Timestamp, time.Unix(0, d.Timestamp.UnixNano()).UTC(), "not representable in a record")
	}
}

func unmarshalUseNumber(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}
