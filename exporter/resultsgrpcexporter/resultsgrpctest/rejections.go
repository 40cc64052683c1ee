// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package resultsgrpctest // import "github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter/resultsgrpctest"

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/resultbatch"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Reasons the reference results server gives for NUL and NoCluster of a Rejectable batch.
const (
	ReasonNUL       = "a text field contains a NUL character"
	ReasonNoCluster = "cluster is missing: set it on the result or as k8s.cluster.name in extra_metadata"
)

// Rejectable is a batch of results 0 to 3 of round 0, which are stored, and three that are not: Tampered, whose
// policy a processor rewrote without recomputing its key (the exporter drops it as invalid), NUL, with a NUL
// character in its message, and NoCluster, without a cluster and with none in extra_metadata either (a server
// rejects both).
type Rejectable struct {
	Logs                     plog.Logs
	Tampered, NUL, NoCluster policyresult.Result
}

// NewRejectable builds the batch.
func NewRejectable() Rejectable {
	r := Rejectable{Logs: resultbatch.Logs(0, 4, 0), Tampered: resultbatch.Result(4, 0), NUL: resultbatch.Result(5, 0),
		NoCluster: resultbatch.Result(6, 0)}
	lrs := r.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	policyresult.WriteLogRecord(&r.Tampered, lrs.AppendEmpty())
	lrs.At(4).Attributes().PutStr(policyresult.AttrPolicy, "renamed")
	r.NUL.Message = "bad\x00message"
	policyresult.WriteLogRecord(&r.NUL, lrs.AppendEmpty())
	r.NoCluster.Cluster = ""
	policyresult.WriteLogRecord(&r.NoCluster, r.Logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	return r
}

// CheckRejected checks what exp, which consumed the batch alone, counted and logged: NUL and NoCluster rejected
// with their reasons (in this order), Tampered dropped as invalid.
func (r Rejectable) CheckRejected(t *testing.T, exp *Exporter) {
	assert.Equal(t, map[string]int64{"accepted": 4, "rejected": 2, "invalid": 1}, exp.Counts("results", "outcome"))
	assert.Equal(t, map[string]int64{"missing_field": 1, "other": 1}, exp.Counts("rejections", "reason"))
	rejections := exp.Log.FilterMessage("The results server rejected a result; it is dropped").AllUntimed()
	require.Len(t, rejections, 2)
	fields := map[string]any{"source": "kyverno", "policy": "require-labels", "rule": "check-team"}
	for i, want := range []struct {
		r      policyresult.Result
		reason string
	}{{r.NUL, ReasonNUL}, {r.NoCluster, ReasonNoCluster}} {
		fields["id"], fields["key"], fields["reason"] = want.r.ID(), want.r.Key(), want.reason
		assert.Equal(t, fields, rejections[i].ContextMap())
	}
	renamed := r.Tampered
	renamed.Policy = "renamed"
	invalid := exp.Log.FilterMessage("Dropping policy.result records that cannot be forwarded").AllUntimed()
	require.Len(t, invalid, 1)
	assert.Equal(t, map[string]any{"dropped_records": int64(1),
		"first_error": "attribute policy.result.key is " + r.Tampered.Key() + " but the identity attributes give " + renamed.Key()},
		invalid[0].ContextMap())
}

// CheckManyRejectionsLogged sends 25 results without a cluster (100 to 124 of round 0), which a server rejects,
// through exp, which logged two rejections before: the first ten are logged one by one, the rest in one line.
func CheckManyRejectionsLogged(t *testing.T, exp *Exporter) {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := range 25 {
		r := resultbatch.Result(100+i, 0)
		r.Cluster = ""
		policyresult.WriteLogRecord(&r, lrs.AppendEmpty())
	}
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	assert.Equal(t, 12, exp.Log.FilterMessage("The results server rejected a result; it is dropped").Len())
	more := exp.Log.FilterMessage("The results server rejected more results of the request; they are dropped").AllUntimed()
	require.Len(t, more, 1)
	assert.Equal(t, map[string]any{"not_logged": int64(15), "rejected": int64(25), "results": int64(25)}, more[0].ContextMap())
}
