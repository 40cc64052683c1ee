// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/filebaseline"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/recordjson"
)

// benchBatch is a sending_queue batch of Pod Security Standards results.
const benchBatch = 5000

var psChecks = []string{"privileged-containers", "host-namespaces", "host-path-volumes", "host-ports",
	"capabilities", "seccomp", "run-as-non-root", "volume-types", "sysctls"}

// benchLogs holds PSS-shaped results of about 1 KB each as a JSON line: the attributes of a result plus the
// engine's result as a map body.
func benchLogs() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "prod-eu-1")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	lrs.EnsureCapacity(benchBatch)
	for i := range benchBatch {
		check := psChecks[i%len(psChecks)]
		r := policyresult.Result{
			Cluster: "prod-eu-1", Source: "kyverno", Policy: "pod-security-restricted", Rule: check,
			Category: "Pod Security Standards (Restricted)", Severity: policyresult.SeverityHigh,
			Outcome: policyresult.OutcomeFail, State: policyresult.StateChanged,
			Message: fmt.Sprintf("validation error: %s is not allowed by the restricted profile. rule %s failed at path /spec/containers/0/securityContext/", check, check),
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: fmt.Sprintf("team-%d", i%40),
				Name: fmt.Sprintf("checkout-7d9f8b6c4-%05d", i), UID: fmt.Sprintf("6f1c2a4e-8d3b-4c5f-9a7e-%012d", i)},
			Report:    policyresult.Report{Kind: "PolicyReport", Namespace: fmt.Sprintf("team-%d", i%40), Name: fmt.Sprintf("pol-%05d", i)},
			Timestamp: time.Unix(1_760_000_000+int64(i), 0),
		}
		lr := lrs.AppendEmpty()
		policyresult.WriteLogRecord(&r, lr)
		body := lr.Body().SetEmptyMap()
		body.PutStr("policy", r.Policy)
		body.PutStr("rule", check)
		body.PutStr("result", "fail")
		body.PutBool("scored", true)
		body.PutStr("source", "kyverno")
		props := body.PutEmptyMap("properties")
		props.PutStr("controls", check)
		props.PutStr("standard", "restricted")
		props.PutStr("version", "latest")
		body.PutInt("timestamp", 1_760_000_000+int64(i))
	}
	return ld
}

// BenchmarkKafkaExport measures records/s produced into kfake (which discards the records) with each compression,
// and the bytes per record on the wire: the record batches of the produce requests, as the broker stores them.
// The contrib file exporter writes the same records in the same run, for comparison.
func BenchmarkKafkaExport(b *testing.B) {
	ld := benchLogs()
	ld.MarkReadOnly()
	line := recordjson.Append(nil, ld.ResourceLogs().At(0).Resource(), ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0))
	b.Logf("a JSON line is %d bytes", len(line))
	for _, encoding := range []string{EncodingJSON, EncodingOTLPProto} {
		for _, compression := range []string{CompressionNone, CompressionGzip, CompressionZstd, CompressionLZ4} {
			if encoding == EncodingOTLPProto && compression != CompressionNone && compression != CompressionZstd {
				continue
			}
			b.Run("kafka/"+encoding+"/"+compression, func(b *testing.B) {
				c := newCluster(b, kfake.BlackholeProduce())
				var wire atomic.Int64
				c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
					c.KeepControl()
					for _, t := range req.(*kmsg.ProduceRequest).Topics {
						for _, p := range t.Partitions {
							wire.Add(int64(len(p.Records)))
						}
					}
					return nil, nil, false
				})
				cfg := syncConfig(c)
				cfg.Logs.Encoding = encoding
				cfg.Producer.Compression = compression
				exp := startExporter(b, cfg)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(wire.Load())/float64(b.N*benchBatch), "bytes/record")
			})
		}
	}
	filebaseline.Run(b, ld, benchBatch)
}
