// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decode

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestDecodeGatekeeper(t *testing.T) {
	auditViolation := policyresult.Decision{
		ID: "120fb03aea75b815a1da53d222a4f30f", Kind: policyresult.DecisionKindAudit, Source: "gatekeeper",
		Policy: "K8sRequiredLabels", Rule: "pod-must-have-test", Action: policyresult.ActionDeny,
		Messages: []string{`you must provide labels: {"test"}`},
		Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "nginx", Name: "nginx-deployment-cd55c47f5-2b84x"},
	}
	withTime := func(d policyresult.Decision, ts string) policyresult.Decision {
		d.Timestamp = utc(ts)
		return d
	}
	for _, tt := range []struct {
		name, file string
		want       policyresult.Decision
	}{
		{
			name: "audit export message: timestamp from the audit id",
			file: "gatekeeper_audit.json",
			want: withTime(auditViolation, "2023-07-18T21:21:52Z"),
		},
		{
			name: "audit log line: the same violation gets the same ID",
			file: "gatekeeper_log_audit.json",
			want: withTime(auditViolation, "2023-07-18T21:21:53.4210317Z"),
		},
		{
			name: "admission export message with request user and operation",
			file: "gatekeeper_admission.json",
			want: policyresult.Decision{
				ID: "7724268ae17f88e2ddef9e85f8d26ba5", Kind: policyresult.DecisionKindAdmission, Source: "gatekeeper",
				Policy: "K8sRequiredLabels", Rule: "deployments-must-have-owner", Allowed: ptr(false),
				Action: policyresult.ActionDeny, Messages: []string{`you must provide labels: {"owner"}`},
				Operation: "CREATE", User: "system:serviceaccount:argocd:argocd-application-controller",
				Resource: policyresult.Resource{
					APIVersion: "apps/v1", Kind: "Deployment", Namespace: "payments", Name: "checkout",
					UID: "4f1c2b0e-9f5d-4d4e-8a77-1e2d3c4b5a69",
				},
				Timestamp: utc("2024-05-06T07:08:13.25Z"),
			},
		},
		{
			name: "--log-denies line",
			file: "gatekeeper_log_admission.json",
			want: policyresult.Decision{
				ID: "8fae28f32e2487c954389ae7a05bb10f", Kind: policyresult.DecisionKindAdmission, Source: "gatekeeper",
				Policy: "K8sPSPPrivilegedContainer", Rule: "no-privileged-containers", Allowed: ptr(false),
				Action: policyresult.ActionDeny, Messages: []string{"denied admission"},
				User:      "system:serviceaccount:kube-system:replicaset-controller",
				Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "flux-podinfo-84d5bccfd6-4l6tq"},
				Timestamp: utc("2022-02-16T13:30:28.7589638Z"),
			},
		},
		{
			name: "scoped enforcement: the strongest of the listed actions",
			file: "gatekeeper_scoped.json",
			want: policyresult.Decision{
				ID: "2002a216ed7e57547c17a8733c1379c0", Kind: policyresult.DecisionKindAudit, Source: "gatekeeper",
				Policy: "K8sAllowedRepos", Rule: "repos-scoped", Action: policyresult.ActionWarn,
				Messages:  []string{"container <app> has an invalid image repo <docker.io/app:1>"},
				Resource:  policyresult.Resource{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "data", Name: "db"},
				Timestamp: utc("2024-05-06T07:00:00Z"),
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := fixture(t, tt.file)
			got, err := Gatekeeper(raw)
			require.NoError(t, err)
			// The message is the body as it came, without its trailing newline.
			requireDecoded(t, got, Event{Decision: tt.want}, string(raw), "")
			require.Equal(t, string(raw[:len(raw)-1]), string(got.Body))
		})
	}
}

func TestDecodeGatekeeperFields(t *testing.T) {
	for _, tt := range []struct {
		name, event string
		check       func(t *testing.T, d policyresult.Decision)
	}{
		{"admission warn is allowed", `{"eventType":"violation_admission","enforcementAction":"warn"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, ptr(true), d.Allowed)
			require.Equal(t, policyresult.ActionWarn, d.Action)
		}},
		{"admission without an action has no verdict", `{"eventType":"violation_admission"}`, func(t *testing.T, d policyresult.Decision) {
			require.Nil(t, d.Allowed)
		}},
		{"audit deny has no verdict", `{"eventType":"violation_audited","enforcementAction":"deny"}`, func(t *testing.T, d policyresult.Decision) {
			require.Nil(t, d.Allowed)
		}},
		{"scoped: deny wins", `{"eventType":"violation_audited","enforcementAction":"scoped","enforcementActions":["warn","deny","dryrun"]}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, policyresult.ActionDeny, d.Action)
		}},
		{"user names in order of preference", `{"eventType":"violation_admission","username":"d","userInfo":{"username":"c"},"requestUserName":"b"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, "b", d.User)
		}},
		{"resourceUid and evaluationTimestamp", `{"eventType":"violation_admission","resourceUid":"u","evaluationTimestamp":"2024-01-02T03:04:05Z"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, "u", d.Resource.UID)
			require.Equal(t, utc("2024-01-02T03:04:05Z"), d.Timestamp)
		}},
		{"log line with the request operation and an RFC 3339 ts", `{"process":"admission","event_type":"violation","request_operation":"UPDATE","ts":"2024-01-02T03:04:05Z"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, "UPDATE", d.Operation)
			require.Equal(t, policyresult.DecisionKindAdmission, d.Kind)
			require.Equal(t, utc("2024-01-02T03:04:05Z"), d.Timestamp)
		}},
		{"a non-time id leaves no timestamp", `{"eventType":"violation_admission","id":"abc"}`, func(t *testing.T, d policyresult.Decision) {
			require.True(t, d.Timestamp.IsZero())
		}},
		{"an id out of the record range leaves no timestamp (found by FuzzDecodeGatekeeper)", `{"eventType":"violation_audited","id":"0000-01-01T00:00:00Z"}`, func(t *testing.T, d policyresult.Decision) {
			require.True(t, d.Timestamp.IsZero())
		}},
		{"audit log line without event_type", `{"process":"audit","constraint_kind":"K"}`, func(t *testing.T, d policyresult.Decision) {
			require.Equal(t, policyresult.DecisionKindAudit, d.Kind)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Gatekeeper([]byte(tt.event))
			require.NoError(t, err)
			tt.check(t, got.Decision)
		})
	}
}

func TestDecodeGatekeeperIDsTellViolationsApart(t *testing.T) {
	base := `{"id":"2023-07-18T21:21:52Z","eventType":"violation_audited","kind":"K","name":"n","resourceKind":"Pod","resourceNamespace":"ns","resourceName":"p","message":"m"`
	ids := map[string]string{}
	for _, extra := range []string{``, `,"resourceName":"q"`, `,"message":"m2"`, `,"id":"2023-07-18T21:22:52Z"`, `,"eventType":"violation_admission"`, `,"resourceGroup":"apps"`} {
		got, err := Gatekeeper([]byte(base + extra + `}`))
		require.NoError(t, err)
		require.NotContains(t, ids, got.Decision.ID, extra)
		ids[got.Decision.ID] = extra
	}
}

func TestDecodeGatekeeperErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`"violation"`, "want a JSON object, got string"},
		{`{"eventType":"violation_audited","kind":7}`, "kind: want a string, got number"},
		{`{"event_type":"violation","constraint_name":{"a":1}}`, "constraint_name: want a string, got object"},
		{`{"eventType":"violation_audited","enforcementActions":"deny"}`, "enforcementActions: want an array of strings, got string"},
		{`{"eventType":"violation_audited","enforcementActions":["deny",1]}`, "enforcementActions: want an array of strings, got array"},
		{`{"eventType":"violation_admission","userInfo":"bob"}`, "userInfo: want an object, got string"},
		{`{"eventType":"violation_admission","userInfo":{"username":1}}`, "userInfo.username: want a string, got number"},
		{`{"eventType":"violation_mutated"}`, `eventType: unknown violation event type "violation_mutated"`},
		{`{"kind":"K"}`, "eventType: missing"},
		{`{"eventType":"violation_audited","timestamp":"soon"}`, `timestamp: want an RFC 3339 time, got "soon"`},
		{`{"event_type":"violation","ts":true}`, "ts: want an RFC 3339 string or a number, got bool"},
		{`{"eventType":"violation_audited",`, "invalid JSON at byte 33: unexpected end of input"},
	} {
		_, err := Gatekeeper([]byte(tt.in))
		require.EqualError(t, err, tt.want, tt.in)
		require.NotErrorIs(t, err, ErrNotDecision)
	}
}

func TestDecodeGatekeeperOtherEventsAreNoDecisions(t *testing.T) {
	_, err := Gatekeeper(fixture(t, "gatekeeper_log_other.json"))
	require.EqualError(t, err, `not a decision event: Gatekeeper event type "constraint_audited" is not a violation`)
	require.True(t, errors.Is(err, ErrNotDecision))
}
