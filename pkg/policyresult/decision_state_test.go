// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"
)

func TestViolationHashes(t *testing.T) {
	base := Decision{ID: "run-1", Kind: DecisionKindAudit, Source: "gatekeeper", Policy: "K8sRequiredLabels", Rule: "must-have-owner",
		Action: ActionDeny, Messages: []string{"you must provide labels: owner"},
		Resource: Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "p1"}, Timestamp: time.Unix(1, 0)}
	h := base.ViolationHashes()

	again := base
	again.ID, again.Timestamp = "run-2", time.Unix(61, 0)
	assert.Equal(t, h, again.ViolationHashes(), "the next run's report of the same violation")

	warned := base
	warned.Action = ActionWarn
	assert.Equal(t, h.Key, warned.ViolationHashes().Key, "the same violation")
	assert.NotEqual(t, h.ID, warned.ViolationHashes().ID, "enforced differently")

	for name, mutate := range map[string]func(*Decision){
		"message":  func(d *Decision) { d.Messages = []string{"another"} },
		"resource": func(d *Decision) { d.Resource.Name = "p2" },
		"rule":     func(d *Decision) { d.Rule = "other" },
		"kind":     func(d *Decision) { d.Kind = DecisionKindAdmission },
	} {
		d := base
		mutate(&d)
		assert.NotEqual(t, h.Key, d.ViolationHashes().Key, name)
	}
}

func TestWriteDecisionState(t *testing.T) {
	lr := plog.NewLogRecord()
	WriteDecisionState(lr, StateNone)
	assert.Equal(t, 0, lr.Attributes().Len())
	WriteDecisionState(lr, StateResolved)
	v, ok := lr.Attributes().Get(AttrResultState)
	assert.True(t, ok)
	assert.Equal(t, string(StateResolved), v.Str())
}
