// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestDecodeOPA(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		want       policyresult.Decision
		body       string
		input      string
	}{
		{
			name: "boolean result, pretty-printed",
			file: "opa_bool.json",
			want: policyresult.Decision{
				ID: "4ca636c1-55e4-417a-b1d8-4aceb67960d1", Kind: policyresult.DecisionKindQuery, Source: "opa",
				Policy: "http/example/authz/allow", Allowed: ptr(false), Action: policyresult.ActionDeny,
				Timestamp: utc("2024-05-06T07:08:09.123456789Z"),
			},
			body: `{"labels":{"app":"payments-api","id":"1780d507-aea2-45cc-ae50-fa153c8e4a5a","version":"0.68.0"},
				"decision_id":"4ca636c1-55e4-417a-b1d8-4aceb67960d1",
				"bundles":{"authz":{"revision":"W3sibCI6InN5cy9jYXRhbG9nIiwicyI6NDA3MX1d"}},
				"path":"http/example/authz/allow","result":false,"requested_by":"[::1]:59943",
				"timestamp":"2024-05-06T07:08:09.123456789Z",
				"metrics":{"timer_rego_query_eval_ns":41235,"timer_server_handler_ns":83021},"req_id":7}`,
			input: `{"method":"GET","path":["salary","bob"],"user":"alice"}`,
		},
		{
			name: "AdmissionReview input, kube-mgmt style result denying with a status message",
			file: "opa_admission.json",
			want: policyresult.Decision{
				ID: "0d8ab0a4-bd3d-4d5f-b9e3-3b1e7a5d8c11", Kind: policyresult.DecisionKindAdmission, Source: "opa",
				Policy: "kubernetes/admission", Allowed: ptr(false), Action: policyresult.ActionDeny,
				Messages:  []string{"image registry.example.com/checkout:1.2.3 is not from an approved registry"},
				Operation: "CREATE", User: "alice@example.com",
				Resource: policyresult.Resource{
					APIVersion: "apps/v1", Kind: "Deployment", Namespace: "payments", Name: "checkout",
					UID: "4f1c2b0e-9f5d-4d4e-8a77-1e2d3c4b5a69",
				},
				Timestamp: utc("2024-05-06T05:08:09.5Z"),
			},
			body: `{"decision_id":"0d8ab0a4-bd3d-4d5f-b9e3-3b1e7a5d8c11",
				"labels":{"id":"5c9bb3a5-2b8e-4a7b-9f7e-0c7c1b1f0a55","version":"1.4.2","app":"kube-mgmt"},
				"bundles":{"policies":{"revision":"a1b2c3d4"}},"path":"kubernetes/admission",
				"result":{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{
					"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":false,"status":{
					"message":"image registry.example.com/checkout:1.2.3 is not from an approved registry",
					"reason":"Forbidden","code":403}}},
				"requested_by":"10.0.0.12:53412","timestamp":"2024-05-06T07:08:09.5+02:00",
				"metrics":{"timer_rego_query_eval_ns":123456,"timer_server_handler_ns":234567}}`,
			input: string(mustJSONMember(fixture(t, "opa_admission.json"), "input")),
		},
		{
			name: "object result without an allow: no verdict",
			file: "opa_object.json",
			want: policyresult.Decision{
				ID: "b7e2c1d0-6f3a-4e5b-9c8d-7a6b5c4d3e2f", Kind: policyresult.DecisionKindQuery, Source: "opa",
				Policy: "ratelimit/config", Timestamp: utc("2024-05-06T07:08:10Z"),
			},
			body: `{"decision_id":"b7e2c1d0-6f3a-4e5b-9c8d-7a6b5c4d3e2f",
				"labels":{"id":"9d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6","version":"0.68.0"},"path":"ratelimit/config",
				"result":{"region":"eu-west-1","limits":{"rps":100,"burst":20},"reasons":["tenant tier gold"]},
				"requested_by":"10.0.3.7:40112","timestamp":"2024-05-06T07:08:10Z"}`,
			input: `{"tenant":"acme","route":"/v1/orders"}`,
		},
		{
			name: "erased and masked input, allow with deny messages",
			file: "opa_erased_masked.json",
			want: policyresult.Decision{
				ID: "e1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8", Kind: policyresult.DecisionKindQuery, Source: "opa",
				Policy: "http/example/authz", Allowed: ptr(false), Action: policyresult.ActionDeny,
				Messages:  []string{"token expired", "user bob is suspended"},
				Timestamp: utc("2024-05-06T07:08:11.000001Z"),
			},
			body: `{"decision_id":"e1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8",
				"labels":{"id":"1780d507-aea2-45cc-ae50-fa153c8e4a5a","version":"0.68.0"},"path":"http/example/authz",
				"result":{"allow":false,"deny":["token expired","user bob is suspended"]},
				"erased":["/input/password"],"masked":["/input/token"],
				"nd_builtin_cache":{"time.now_ns":{"[]":1715000000000000000}},
				"intermediate_results":{"data.http.example.authz.suspended":true},"req_id":12,
				"requested_by":"[::1]:59944","timestamp":"2024-05-06T07:08:11.000001Z"}`,
			input: `{"user":"bob","token":"**REDACTED**","method":"POST","path":["payments"]}`,
		},
		{
			name: "input erased entirely, response-shaped result",
			file: "opa_erased_input.json",
			want: policyresult.Decision{
				ID: "f0e1d2c3-b4a5-4968-8776-655443322110", Kind: policyresult.DecisionKindQuery, Source: "opa",
				Policy: "http/example/authz/allow", Allowed: ptr(true), Timestamp: utc("2024-05-06T07:08:12Z"),
			},
			body: string(fixture(t, "opa_erased_input.json")),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OPA(fixture(t, tt.file))
			require.NoError(t, err)
			requireDecoded(t, got, Event{Decision: tt.want}, tt.body, tt.input)
		})
	}
}

// mustJSONMember returns the value of a top-level member of a fixture.
func mustJSONMember(raw []byte, key string) []byte {
	_, ms, err := jsonscan.Object(raw, nil)
	if err != nil {
		panic(err)
	}
	v, _ := ms.Lookup(key)
	return v
}

func TestDecodeOPAResults(t *testing.T) {
	for _, tt := range []struct {
		name     string
		event    string
		allowed  *bool
		messages []string
		kind     string
		resource policyresult.Resource
	}{
		{"true", `"result":true`, ptr(true), nil, "query", policyresult.Resource{}},
		{"string true is no verdict", `"result":"true"`, nil, nil, "query", policyresult.Resource{}},
		{"allowed wins over allow", `"result":{"allow":false,"allowed":true}`, ptr(true), nil, "query", policyresult.Resource{}},
		{"response.allowed", `"result":{"response":{"allowed":true}}`, ptr(true), nil, "query", policyresult.Resource{}},
		{"allowed of another type", `"result":{"allowed":"yes"}`, nil, nil, "query", policyresult.Resource{}},
		{"violations", `"result":{"violations":["a","b"]}`, nil, []string{"a", "b"}, "query", policyresult.Resource{}},
		{"deny with a non-string is no messages", `"result":{"allow":false,"deny":["a",{"msg":"b"}]}`, ptr(false), nil, "query", policyresult.Resource{}},
		{"status message wins over deny", `"result":{"deny":["a"],"response":{"allowed":false,"status":{"message":"m"}}}`, ptr(false), []string{"m"}, "query", policyresult.Resource{}},
		{"null result", `"result":null`, nil, nil, "query", policyresult.Resource{}},
		{
			"request with a uid is an admission; core group; DELETE names the old object",
			`"input":{"request":{"uid":"u","kind":{"group":"","version":"v1","kind":"ConfigMap"},"namespace":"ns","operation":"DELETE","object":null,"oldObject":{"metadata":{"name":"cm","uid":"c-1"}}}}`,
			nil, nil, "admission", policyresult.Resource{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm", UID: "c-1"},
		},
		{
			"request name wins over the object's",
			`"input":{"kind":"AdmissionReview","request":{"name":"n","object":{"metadata":{"name":"other"}}}}`,
			nil, nil, "admission", policyresult.Resource{Name: "n"},
		},
		{
			"an input that only looks like a review is a query",
			`"input":{"kind":{"k":"AdmissionReview"},"request":{"uid":7,"namespace":"ns"}}`,
			nil, nil, "query", policyresult.Resource{},
		},
		{"input of another type", `"input":[1,2]`, nil, nil, "query", policyresult.Resource{}},
		{
			"escapes and quotes inside the values walked over",
			`"input":{"request":{"uid":"\"u\"","note":"a \"}\" b","kind":{"group":"x\\","version":"v\u0031","kind":"K"},"name":"n\"","object":{"spec":{"s":"}\\"},"metadata":{"uid":"\\"}}}},"result":{"response":{"status":{"x":"\"","message":"no \"x\""},"allowed":false}}`,
			ptr(false), []string{`no "x"`}, "admission", policyresult.Resource{APIVersion: `x\/v1`, Kind: "K", Name: `n"`, UID: `\`},
		},
		{
			"a repeated key replaces the earlier value whole",
			`"result":{"response":{"allowed":true,"status":{"message":"m"}},"response":{"status":{}}},"input":{"request":{"uid":"u","kind":{"kind":"A"},"kind":{"version":"v1"}}}`,
			nil, nil, "admission", policyresult.Resource{APIVersion: "v1"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OPA([]byte(`{"decision_id":"d",` + tt.event + `}`))
			require.NoError(t, err)
			require.Equal(t, tt.allowed, got.Decision.Allowed)
			require.Equal(t, tt.messages, got.Decision.Messages)
			require.Equal(t, tt.kind, got.Decision.Kind)
			require.Equal(t, tt.resource, got.Decision.Resource)
		})
	}
}

func TestDecodeOPAWithoutDecisionIDHashesTheEvent(t *testing.T) {
	ev := []byte(`{"path":"p","result":true,"timestamp":"2024-05-06T07:08:09Z","input":{"a":1}}`)
	a, err := OPA(ev)
	require.NoError(t, err)
	b, err := OPA(ev)
	require.NoError(t, err)
	require.Equal(t, "b75f4b3738b960f882ee76555d50e42c", a.Decision.ID)
	require.Equal(t, a.Decision.ID, b.Decision.ID)
	c, err := OPA([]byte(`{"path":"p","result":true,"timestamp":"2024-05-06T07:08:09Z","input":{"a":2}}`))
	require.NoError(t, err)
	require.NotEqual(t, a.Decision.ID, c.Decision.ID)
}

func TestDecodeOPAInputNull(t *testing.T) {
	got, err := OPA([]byte(`{"decision_id":"d","input":null,"result":true}`))
	require.NoError(t, err)
	require.Nil(t, got.Input)
	require.Equal(t, `{"decision_id":"d","result":true}`, string(got.Body))
}

func TestDecodeOPAErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`[{"decision_id":"d"}]`, "want a JSON object, got array"},
		{`{"decision_id":42}`, "decision_id: want a string, got number"},
		{`{"decision_id":"d","path":["a"]}`, "path: want a string, got array"},
		{`{"decision_id":"d","timestamp":1715000000}`, "timestamp: want a string, got number"},
		{`{"decision_id":"d","timestamp":"yesterday"}`, `timestamp: want an RFC 3339 time, got "yesterday"`},
		{`{"decision_id":"d","result":{"allow":tru`, "invalid JSON at byte 40: unexpected end of input"},
		{`{"decision_id":"d","input":{"a":1}`, "invalid JSON at byte 34: unexpected end of input"},
	} {
		_, err := OPA([]byte(tt.in))
		require.EqualError(t, err, tt.want, tt.in)
	}
}
