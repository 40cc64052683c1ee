// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package resultsgrpc tests and benchmarks the results_grpc exporter, as its factory builds it, forwarding to
// the reference results server (results-server/server) in-process over loopback gRPC, storing into SQLite and
// into PostgreSQL. Run the benchmark with
// `go test -run '^$' -bench BenchmarkResultsGRPC -benchtime 20x ./testbed/resultsgrpc/`.
//
// It reports no peak RSS, unlike the benchmarks of the binary: the exporter, the results server with its SQLite
// database and the generation of the payloads share this test process, so its resident memory is none of them
// alone (and PostgreSQL runs in processes of its own).
package resultsgrpc

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/otelcol-policy/otelcol-policy/exporter/resultsgrpcexporter"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/results-server/server"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// batchSize is one ConsumeLogs call, as a sending_queue batch would be; the exporter splits it into requests
// of max_results_per_request.
const batchSize = 5000

var psChecks = []string{"privileged-containers", "host-namespaces", "host-path-volumes", "host-ports",
	"capabilities", "seccomp", "run-as-non-root", "volume-types", "sysctls"}

// benchLogs holds Pod Security Standards results of about 1.2 KB each as a JSON line (the attributes plus the
// engine's result as a map body), as the k8s_reports receiver emits them. Every batch holds new results (keys
// first … first+batchSize-1), so that the server writes every one of them.
func benchLogs(first int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	policyresult.WriteResource(rl.Resource(), "prod-eu-1")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	lrs.EnsureCapacity(batchSize)
	observed := pcommon.NewTimestampFromTime(time.Now())
	for i := first; i < first+batchSize; i++ {
		check := psChecks[i%len(psChecks)]
		scored := true
		r := policyresult.Result{
			Cluster: "prod-eu-1", Source: "kyverno", Policy: "pod-security-restricted", Rule: check,
			Category: "Pod Security Standards (Restricted)", Severity: policyresult.SeverityHigh,
			Outcome: policyresult.OutcomeFail, State: policyresult.StateNew, Scored: &scored,
			Message: fmt.Sprintf("validation error: %s is not allowed by the restricted profile. rule %s failed at path /spec/containers/0/securityContext/", check, check),
			Resource: policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: fmt.Sprintf("team-%d", i%40),
				Name: fmt.Sprintf("checkout-7d9f8b6c4-%07d", i), UID: fmt.Sprintf("6f1c2a4e-8d3b-4c5f-9a7e-%012d", i)},
			Report:    policyresult.Report{Kind: "PolicyReport", Namespace: fmt.Sprintf("team-%d", i%40), Name: fmt.Sprintf("pol-%07d", i)},
			Timestamp: time.Unix(1_760_000_000+int64(i), 0),
		}
		lr := lrs.AppendEmpty()
		policyresult.WriteLogRecord(&r, lr)
		lr.SetObservedTimestamp(observed)
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

func BenchmarkResultsGRPC(b *testing.B) {
	// One PostgreSQL server for the benchmark: pgtest stops it when the testing.TB it was given ends, so it
	// is started here rather than in a sub-benchmark.
	pg := pgtest.Start(b)
	dbs := 0
	for _, backend := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "results.db") }},
		{"postgres", func(b *testing.B) string {
			dbs++
			return pg.CreateDB(fmt.Sprintf("bench_%d", dbs))
		}},
	} {
		for _, perRequest := range []int{1000, 100} {
			b.Run(fmt.Sprintf("%s/per_request=%d", backend.name, perRequest), func(b *testing.B) {
				bench(b, backend.dsn(b), perRequest)
			})
		}
	}
}

func bench(b *testing.B, dsn string, perRequest int) {
	ctx := context.Background()
	srv, err := server.Open(ctx, server.Config{DB: dsn, Logger: zap.NewNop()})
	require.NoError(b, err)
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	gs := srv.GRPCServer()
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()

	f := resultsgrpcexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*resultsgrpcexporter.Config)
	cfg.ClientConfig.Endpoint = ln.Addr().String()
	cfg.ClientConfig.TLS.Insecure = true
	cfg.MaxResultsPerRequest = perRequest
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	cfg.TimeoutConfig.Timeout = time.Minute
	exp, err := f.CreateLogs(ctx, exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(b, err)
	require.NoError(b, exp.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(b, exp.Shutdown(ctx)) }()

	var exported int
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		ld := benchLogs(exported)
		b.StartTimer()
		start := time.Now()
		require.NoError(b, exp.ConsumeLogs(ctx, ld))
		elapsed += time.Since(start)
		exported += batchSize
	}
	v, err := srv.Fleet(ctx, store.Filter{Limit: 1})
	require.NoError(b, err)
	require.Equal(b, int64(exported), v.Clusters[0].Total, "every result stored")
	b.ReportMetric(float64(exported)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(perRequest), "results/request")
}
