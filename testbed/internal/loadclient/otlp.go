// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package loadclient

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// OTLPResults posts policy.result records as OTLP/HTTP JSON, as an agent collector forwarding results to a
// gateway does. Every item is a failing result about its own Pod; its id is the result's policy.result.key.
var OTLPResults = Encoding{
	Name:    "otlp",
	Headers: map[string]string{"Content-Type": "application/json"},
	Build: func(runID string, first, n int, ts time.Time) Chunk {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		policyresult.WriteResource(rl.Resource(), "testbed-"+runID)
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		c := Chunk{IDs: make([]string, 0, n)}
		for i := first; i < first+n; i++ {
			r := policyresult.Result{
				Cluster: "testbed-" + runID, Source: "kyverno", Policy: "require-run-as-nonroot", Rule: "run-as-non-root",
				Category: "Pod Security Standards (Restricted)", Severity: policyresult.SeverityMedium,
				Outcome: policyresult.OutcomeFail, State: policyresult.StateNew, Timestamp: ts,
				Message: "validation error: Running as root is not allowed.",
				Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: fmt.Sprintf("ns-%d", i%50),
					Name: fmt.Sprintf("%s-pod-%08d", runID, i)},
			}
			policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
			c.IDs = append(c.IDs, r.Key())
		}
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		if err != nil {
			panic(err) // pdata built here always marshals
		}
		c.Body = b
		return c
	},
}
