// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

func TestDecisionRoundTrip(t *testing.T) {
	denied, allowed := false, true
	for name, d := range map[string]Decision{
		"gatekeeper admission": {Cluster: "c1", ID: "d-1", Kind: DecisionKindAdmission, Source: "gatekeeper", Policy: "K8sRequiredLabels",
			Rule: "must-have-owner", Allowed: &denied, Action: ActionDeny, Messages: []string{"you must provide labels: owner", "second"},
			Operation: "CREATE", User: "alice", Resource: Resource{APIVersion: "v1", Kind: "Namespace", Name: "shop"},
			Timestamp: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)},
		"opa query":  {ID: "4ca636c1", Kind: DecisionKindQuery, Source: "opa", Policy: "http/authz/allow", Allowed: &allowed},
		"opa object": {ID: "x", Kind: DecisionKindQuery, Source: "opa", Policy: "data/reports"},
	} {
		t.Run(name, func(t *testing.T) {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			WriteResource(rl.Resource(), d.Cluster)
			WriteDecisionLogRecord(&d, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
			raw, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
			require.NoError(t, err)
			ld, err = (&plog.ProtoUnmarshaler{}).UnmarshalLogs(raw)
			require.NoError(t, err)
			got, err := ReadDecisionLogRecord(ld.ResourceLogs().At(0).Resource(), firstRecord(ld))
			require.NoError(t, err)
			assert.Equal(t, d, got)
		})
	}
}

func TestDecisionOutcome(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		d    Decision
		want Outcome
	}{
		{Decision{Allowed: &yes}, OutcomePass},
		{Decision{Allowed: &no}, OutcomeFail},
		{Decision{Allowed: &no, Action: ActionDeny}, OutcomeFail},
		{Decision{Action: ActionDeny}, OutcomeFail},
		{Decision{Allowed: &yes, Action: ActionWarn}, OutcomeWarn},
		{Decision{Action: ActionDryRun}, OutcomeWarn},
		{Decision{}, ""},
	} {
		assert.Equal(t, tt.want, tt.d.Outcome(), "%+v", tt.d)
	}
	assert.Equal(t, ActionDryRun, ParseAction("Audit"))
	assert.Equal(t, ActionDeny, ParseAction("DENY"))
	assert.Equal(t, ActionNone, ParseAction("scoped"))
}

func TestDecisionRecordAttributes(t *testing.T) {
	no := false
	d := Decision{ID: "d-1", Source: "gatekeeper", Policy: "K8sRequiredLabels", Allowed: &no, Action: ActionDeny,
		Messages: []string{"m1"}, Resource: Resource{Kind: "Pod", Namespace: "shop", Name: "web"}}
	lr := plog.NewLogRecord()
	WriteDecisionLogRecord(&d, lr)
	assert.Equal(t, EventDecision, lr.EventName())
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber(), "a denial without severity is a warning, like a failed result")
	assert.Equal(t, map[string]any{
		AttrEventName: EventDecision, AttrDecisionID: "d-1", AttrSource: "gatekeeper", AttrPolicy: "K8sRequiredLabels",
		AttrResult: "fail", AttrDecisionAllowed: false, AttrDecisionAction: "deny", AttrMessage: "m1",
		AttrDecisionMessages: []any{"m1"}, AttrResourceKind: "Pod", AttrResourceNamespace: "shop", AttrResourceName: "web",
	}, lr.Attributes().AsRaw())
	_, err := ReadLogRecord(pcommonResource(), lr)
	assert.ErrorIs(t, err, ErrNotResult)
}

func pcommonResource() pcommon.Resource { return plog.NewResourceLogs().Resource() }
