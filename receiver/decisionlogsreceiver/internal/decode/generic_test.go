// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// paymentsMapping maps testdata/decoders/generic.json.
var paymentsMapping = GenericMapping{
	ID: "event.id", Policy: "policy.name", Rule: "policy.rule", Allowed: "verdict", Message: "reasons",
	Operation: "action", User: "actor.name", Timestamp: "event.time", Input: "request", Source: "payments",
	ResourceKind: "target.kind", ResourceNamespace: "target.namespace", ResourceName: "target.name",
}

func TestDecodeGeneric(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		mapping    GenericMapping
		want       policyresult.Decision
		body       string
		input      string
	}{
		{
			name:    "every field mapped",
			file:    "generic.json",
			mapping: paymentsMapping,
			want: policyresult.Decision{
				ID: "evt-81723", Kind: policyresult.DecisionKindQuery, Source: "payments",
				Policy: "payments.transfer", Rule: "daily-limit", Allowed: ptr(false), Action: policyresult.ActionDeny,
				Messages: []string{"amount exceeds daily limit", "new payee"}, Operation: "transfer", User: "carol",
				Resource:  policyresult.Resource{Kind: "Account", Namespace: "retail", Name: "acct-991"},
				Timestamp: utc("2024-05-06T12:53:20.123Z"),
			},
			body: `{"event":{"id":"evt-81723","time":1715000000123},"policy":{"name":"payments.transfer","rule":"daily-limit"},
				"verdict":"denied","reasons":["amount exceeds daily limit","new payee"],"actor":{"name":"carol"},
				"action":"transfer","target":{"kind":"Account","namespace":"retail","name":"acct-991"}}`,
			input: `{"amount":25000,"currency":"EUR"}`,
		},
		{
			name: "no id: a content hash; a nested input; the top-level input is not the mapped one",
			file: "generic_nested_input.json",
			mapping: GenericMapping{
				Policy: "decision.policy", Allowed: "decision.allowed", Message: "decision.message", Timestamp: "ts",
				User: "ctx.caller", Input: "ctx.input",
			},
			want: policyresult.Decision{
				ID: "d6ec8463300f336bac4cf087bd7c21e9", Kind: policyresult.DecisionKindQuery, Source: "generic",
				Policy: "cdn.purge", Allowed: ptr(true), Messages: []string{"purge within quota"}, User: "svc-cms",
				Timestamp: utc("2024-05-06T07:08:14Z"),
			},
			body: `{"ts":"2024-05-06T07:08:14Z","decision":{"policy":"cdn.purge","allowed":true,"message":"purge within quota"},
				"ctx":{"caller":"svc-cms"},"input":"a top-level input that the mapping does not name"}`,
			input: `{"paths":["/img/*"],"token":"t0k"}`,
		},
		{
			name:    "input defaults to the top-level input; missing fields stay empty",
			file:    "opa_object.json",
			mapping: GenericMapping{ID: "decision_id", Policy: "path", Allowed: "result.allowed", User: "labels.user"},
			want: policyresult.Decision{
				ID: "b7e2c1d0-6f3a-4e5b-9c8d-7a6b5c4d3e2f", Kind: policyresult.DecisionKindQuery, Source: "generic",
				Policy: "ratelimit/config",
			},
			body:  string(mustWithout(fixture(t, "opa_object.json"), "input")),
			input: `{"tenant":"acme","route":"/v1/orders"}`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewGeneric(tt.mapping)(fixture(t, tt.file))
			require.NoError(t, err)
			requireDecoded(t, got, Event{Decision: tt.want}, tt.body, tt.input)
		})
	}
}

// mustWithout returns a fixture without a top-level member.
func mustWithout(raw []byte, key string) []byte {
	obj, ms, err := jsonscan.Object(raw, nil)
	if err != nil {
		panic(err)
	}
	body, _ := jsonscan.WithoutPath(obj, ms, []string{key})
	return body
}

func TestDecodeGenericValues(t *testing.T) {
	m := GenericMapping{ID: "id", Policy: "p", Allowed: "a", Message: "m", Action: "act", Timestamp: "t"}
	for _, tt := range []struct {
		name, event string
		check       func(t *testing.T, d policyresult.Decision)
	}{
		{"numeric id", `{"id":12345678901234567890}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, "12345678901234567890", d.ID)
		}},
		{"allow word", `{"p":"x","a":" Allowed "}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, ptr(true), d.Allowed)
			require.Equal(t, policyresult.ActionNone, d.Action)
		}},
		{"deny word", `{"p":"x","a":"DENY"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, ptr(false), d.Allowed)
			require.Equal(t, policyresult.ActionDeny, d.Action)
		}},
		{"the mapped action wins", `{"p":"x","a":false,"act":"warn"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, policyresult.ActionWarn, d.Action)
		}},
		{"single message", `{"p":"x","m":"only"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, []string{"only"}, d.Messages)
		}},
		{"epoch seconds", `{"p":"x","t":1715000000}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, utc("2024-05-06T12:53:20Z"), d.Timestamp)
		}},
		{"nulls are absent", `{"id":null,"p":null,"a":null,"m":null,"t":null,"act":null}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, policyresult.Decision{
				ID: "0e1185b8cf900ba24af683104f960e2d", Kind: policyresult.DecisionKindQuery, Source: "generic",
			}, d)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewGeneric(m)([]byte(tt.event))
			require.NoError(t, err)
			tt.check(t, got.Decision)
		})
	}
}

func TestDecodeGenericErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`[]`, "want a JSON object, got array"},
		{`{"policy":{"name":5}}`, "policy.name: want a string, got number"},
		{`{"event":{"id":true}}`, "event.id: want a string or a number, got bool"},
		{`{"verdict":"maybe"}`, `verdict: want true, false, allow, deny, allowed or denied, got "maybe"`},
		{`{"verdict":1}`, "verdict: want a bool or a string, got number"},
		{`{"reasons":[1]}`, "reasons: want a string or an array of strings, got array"},
		{`{"reasons":{}}`, "reasons: want a string or an array of strings, got object"},
		{`{"event":{"time":-5}}`, `event.time: "-5" is not a time in seconds or milliseconds since 1970`},
		{`{"event":{"time":"5 May"}}`, `event.time: want an RFC 3339 time, got "5 May"`},
		{`{"actor":{"name":"a"`, "invalid JSON at byte 20: unexpected end of input"},
	} {
		_, err := NewGeneric(paymentsMapping)([]byte(tt.in))
		require.EqualError(t, err, tt.want, tt.in)
	}
}

func TestGenericMappingValidate(t *testing.T) {
	require.NoError(t, paymentsMapping.Validate())
	require.NoError(t, GenericMapping{ID: "id"}.Validate())
	require.NoError(t, GenericMapping{}.Validate(), "unconfigured")
	require.EqualError(t, GenericMapping{Source: "s"}.Validate(), "policy or id must be mapped")
	require.EqualError(t, GenericMapping{Policy: "a..b", ResourceUID: ".uid", User: "u."}.Validate(),
		"policy: path \"a..b\" has an empty segment\n"+
			"user: path \"u.\" has an empty segment\n"+
			"resource_uid: path \".uid\" has an empty segment")

	_, err := NewGeneric(GenericMapping{Rule: "r"})([]byte(`{}`))
	require.EqualError(t, err, "invalid generic mapping: policy or id must be mapped")
	_, err = NewGeneric(GenericMapping{})([]byte(`{}`))
	require.EqualError(t, err, "invalid generic mapping: policy or id must be mapped")
}
