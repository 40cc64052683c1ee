// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package resultbatch builds batches of policy.result log records for tests of what forwards them: result i of
// round r, where a later round is a new outcome (a new id) of the same key, observed later.
package resultbatch // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Cluster is the cluster of every test result.
const Cluster = "prod-eu-1"

// Result is result i of a test batch; round changes its outcome and message, so that a later round is a new id
// of the same key.
func Result(i, round int) policyresult.Result {
	outcome := policyresult.OutcomeFail
	if round%2 == 1 {
		outcome = policyresult.OutcomePass
	}
	scored := true
	return policyresult.Result{
		Cluster: Cluster, Source: "kyverno", Policy: "require-labels", Rule: "check-team", Category: "Best Practices",
		Severity: policyresult.SeverityMedium, Outcome: outcome, Scored: &scored,
		Message:   fmt.Sprintf("label 'team' is required (round %d)", round),
		Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("pod-%d", i), UID: fmt.Sprintf("uid-%d", i)},
		Report:    policyresult.Report{Kind: "PolicyReport", Namespace: "shop", Name: fmt.Sprintf("uid-%d", i)},
		State:     policyresult.StateNew,
		Timestamp: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC).Add(time.Duration(round) * time.Minute),
	}
}

// Append appends results first..first+n-1 of round to one resource of ld, with an observed time that
// grows with the round, as the server orders outcomes of a key by it.
func Append(ld plog.Logs, first, n, round int) []policyresult.Result {
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), Cluster)
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	out := make([]policyresult.Result, 0, n)
	for i := first; i < first+n; i++ {
		r := Result(i, round)
		lr := lrs.AppendEmpty()
		policyresult.WriteLogRecord(&r, lr)
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).Add(time.Duration(round) * time.Second)))
		lr.Body().SetEmptyMap().PutStr("policy", r.Policy)
		out = append(out, r)
	}
	return out
}

// Logs is a batch of results first..first+n-1 of round.
func Logs(first, n, round int) plog.Logs {
	ld := plog.NewLogs()
	Append(ld, first, n, round)
	return ld
}

// AppendDecision appends a record of another event, which the exporter skips.
func AppendDecision(ld plog.Logs, id string) {
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteDecisionLogRecord(&policyresult.Decision{ID: id, Source: "gatekeeper"}, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
}
