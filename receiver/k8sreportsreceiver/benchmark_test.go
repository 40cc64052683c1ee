// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"fmt"
	"testing"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// benchReport is a PolicyReport-sized list of results: what a watcher hands the emitter for one report version.
const benchReport = 2000

func benchResults() []parse.Result {
	out := make([]parse.Result, benchReport)
	for i := range out {
		out[i] = parse.Result{Result: policyresult.Result{
			Cluster: "prod-eu-1", Source: "kyverno", Policy: "pod-security-restricted", Rule: psRule(i),
			Category: "Pod Security Standards (Restricted)", Severity: policyresult.SeverityHigh,
			Outcome: policyresult.OutcomeFail,
			Message: "validation error: the restricted profile does not allow this. rule " + psRule(i) + " failed",
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: fmt.Sprintf("team-%d", i%40),
				Name: fmt.Sprintf("checkout-7d9f8b6c4-%05d", i/9), UID: fmt.Sprintf("6f1c2a4e-8d3b-4c5f-9a7e-%012d", i/9)},
			Report: policyresult.Report{Kind: "PolicyReport", Namespace: "team-1", Name: "pol-1"},
		}, Body: parse.WholeBody([]byte(`{"policy":"pod-security-restricted","result":"fail"}`))}
	}
	return out
}

func psRule(i int) string {
	return [...]string{"privileged-containers", "host-namespaces", "host-path-volumes", "host-ports", "capabilities",
		"seccomp", "run-as-non-root", "volume-types", "sysctls"}[i%9]
}

// BenchmarkReportVersion measures the emitter's work per report version: diffing against the emitted state and
// building the records of what changed. "new" emits every result, "unchanged" (a relist, a restart) none, and
// "changed" one result in ten.
func BenchmarkReportVersion(b *testing.B) {
	rcv := &reportsReceiver{cfg: createDefaultConfig().(*Config)}
	rcv.cfg.ClusterName = "prod-eu-1"
	results := benchResults()
	_, emitted := diff(nil, results, false, false, true, "prod-eu-1")
	changed := benchResults()
	for i := 0; i < len(changed); i += 10 {
		changed[i].Outcome = policyresult.OutcomePass
	}
	for _, tt := range []struct {
		name string
		prev *emittedReport
		next []parse.Result
	}{
		{"new", nil, results},
		{"unchanged", emitted, results},
		{"changed", emitted, changed},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				recs, _ := diff(tt.prev, tt.next, false, false, true, "prod-eu-1")
				if len(recs) > 0 {
					rcv.toLogs(&batch{parts: []batchPart{{item: &batchItem{records: recs}, to: len(recs)}}, n: len(recs)})
				}
			}
			b.ReportMetric(float64(b.N*len(tt.next))/b.Elapsed().Seconds(), "results/s")
		})
	}
}

// BenchmarkStoredState measures encoding and decoding one report's emitted state, as the storage extension
// keeps it (its rule identities numbered in the dictionary).
func BenchmarkStoredState(b *testing.B) {
	_, emitted := diff(nil, benchResults(), false, false, true, "prod-eu-1")
	k := objKey{policyReportGVR, "team-1", "pol-1"}
	dict := &testDictionary{}
	raw := appendSlot(nil, k, emitted, dict.number)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendSlot(buf[:0], k, emitted, dict.number)
		}
		b.ReportMetric(float64(len(raw))/float64(len(emitted.results)), "B/result")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := dict.decode(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
