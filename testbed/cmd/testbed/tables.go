// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import "fmt"

// table is a section of RESULTS.md: rows of figures, each taken from one benchmark of one step.
type table struct {
	Title string
	About string // what was measured and how, in a sentence or two
	Rows  []row
}

type row struct {
	What     string
	Step     string // benchStep.Name
	Bench    string // benchmark name as benchName returns it
	Measures []measure
}

// measure is one number of a row: a benchmark metric (Unit) or one derived from the metrics of the same run.
type measure struct {
	Unit   string                                     // the benchmark's unit
	Label  string                                     // as shown; Unit when empty
	Scale  float64                                    // multiplies the value (ns → µs); 1 when 0
	Derive func(m map[string]float64) (float64, bool) // instead of Unit, from the same run's metrics
	Target *target                                    // optional
}

// target is a goal of the issues, checked against one statistic of the runs.
type target struct {
	Text   string  // e.g. "≤ 30 s"
	Stat   string  // "min", "median" or "max": the statistic compared
	Limit  float64 // in the measure's shown unit
	AtMost bool    // the statistic must be ≤ Limit (else ≥ Limit)
}

func (t target) met(s summary) bool {
	v := map[string]float64{"min": s.Min, "median": s.Median, "max": s.Max}[t.Stat]
	if t.AtMost {
		return v <= t.Limit
	}
	return v >= t.Limit
}

var (
	perSecond   = measure{Unit: "records/s"}
	perRecord   = measure{Unit: "bytes/record", Label: "bytes per record"}
	micros      = measure{Unit: "ns/op", Label: "µs per op", Scale: 0.001}
	perBatch    = measure{Unit: "B/op", Label: "MB allocated per batch", Scale: 1e-6}
	allocations = measure{Unit: "allocs/op", Label: "allocations per op"}
)

// s3QueryMeasures are the figures of one format of BenchmarkS3Query.
var s3QueryMeasures = []measure{
	{Unit: "bytes/result", Label: "bytes per result"},
	{Unit: "findings-ms", Label: "\"CVSS ≥ 8 with a fix, per cluster\" (ms)"},
	{Unit: "failing-ms", Label: "\"failing results per policy\" (ms)"},
}

// ratio is a/b of one run's metrics.
func ratio(a, b string) func(m map[string]float64) (float64, bool) {
	return func(m map[string]float64) (float64, bool) {
		x, okA := m[a]
		y, okB := m[b]
		if !okA || !okB || y == 0 {
			return 0, false
		}
		return x / y, true
	}
}

// tables are the figures of testbed/results/README.md (and of the benchmarks added since), in its order.
var tables = []table{
	{
		Title: "`durable_file` exporter and result hashing",
		About: "Batches of 1,000 records into the exporter as its factory builds it; hashing and record building of one result.",
		Rows: []row{
			{"`durable_file` exporter, 1,000-record batches, fsync per batch", "durablefile", "BenchmarkConsumeLogs/sync", []measure{perSecond}},
			{"`durable_file` exporter, 1,000-record batches, no fsync", "durablefile", "BenchmarkConsumeLogs/nosync", []measure{perSecond}},
			{"`policy.result.key` + `policy.result.id` of one result", "policyresult", "BenchmarkKeyAndID", []measure{micros, allocations}},
			{"`policyresult.WriteLogRecord` (20 attributes, both hashes)", "policyresult", "BenchmarkWriteLogRecord", []measure{micros, allocations}},
			{"`recordjson.Append`: one result as a JSON line", "recordjson", "BenchmarkAppend", []measure{micros}},
		},
	},
	{
		Title: "Processors and connector",
		About: "Batches of 500–1,000 records through each component as its factory builds it.",
		Rows: []row{
			{"`k8s_metadata_strip`, decisions with an AdmissionReview of a Pod with `managedFields` (4.3 KB), defaults", "strip", "BenchmarkStrip/decision", []measure{perSecond}},
			{"same, `sort_keys: false`", "strip", "BenchmarkStrip/decision_sort_keys_off", []measure{perSecond}},
			{"`k8s_metadata_strip`, report result entries (no object)", "strip-result", "BenchmarkStrip/result", []measure{perSecond}},
			{"`policy_aggregate`, PSS-shaped results whose outcomes change, in memory", "aggregate", "BenchmarkAggregate", []measure{perSecond}},
			{"same, state in `file_storage`", "aggregate", "BenchmarkAggregateStorage", []measure{perSecond}},
			{"`policy_aggregate` / `policy_metrics` state per million result keys (heap after GC, 19,000 groups)", "aggregate-memory", "BenchmarkMemoryPerMillionKeys", []measure{{Unit: "MB/1Mkeys", Label: "MB per million keys"}}},
			{"`policy_metrics`, results by source, policy, namespace", "policymetrics", "BenchmarkResults", []measure{perSecond}},
			{"`policy_metrics`, Gatekeeper decisions by source, policy, action", "policymetrics", "BenchmarkDecisions", []measure{perSecond}},
		},
	},
	{
		Title: "`s3` and `kafka` exporters next to the contrib `file` exporter",
		About: "Batches of 5,000 Pod Security Standards results (about 1.2 KB each as a JSON line, with the engine's result as body); " +
			"MinIO (single drive, local disk) and the kfake broker run on the same cores. The contrib `file` exporter writes the same " +
			"batches in the same benchmark run. Bytes per record: stored in MinIO or on disk, on the wire for Kafka.",
		Rows: []row{
			{"`s3`, JSON lines, gzip", "s3", "BenchmarkS3Export/s3/gzip", []measure{perSecond, perRecord, perBatch}},
			{"`s3`, JSON lines, zstd", "s3", "BenchmarkS3Export/s3/zstd", []measure{perSecond, perRecord, perBatch}},
			{"`s3`, JSON lines, none", "s3", "BenchmarkS3Export/s3/none", []measure{perSecond, perRecord, perBatch}},
			{"`s3`, Parquet, zstd", "s3", "BenchmarkS3Export/s3/parquet+zstd", []measure{perSecond, perRecord, perBatch}},
			{"`s3`, Parquet, snappy", "s3", "BenchmarkS3Export/s3/parquet+snappy", []measure{perSecond, perRecord, perBatch}},
			{"contrib `file`, OTLP JSON (s3 run)", "s3", "BenchmarkS3Export/file/json", []measure{perSecond, perRecord}},
			{"contrib `file`, OTLP JSON, zstd (s3 run)", "s3", "BenchmarkS3Export/file/json+zstd", []measure{perSecond, perRecord}},
			{"`kafka`, json, none", "kafka", "BenchmarkKafkaExport/kafka/json/none", []measure{perSecond, perRecord}},
			{"`kafka`, json, gzip", "kafka", "BenchmarkKafkaExport/kafka/json/gzip", []measure{perSecond, perRecord}},
			{"`kafka`, json, zstd", "kafka", "BenchmarkKafkaExport/kafka/json/zstd", []measure{perSecond, perRecord}},
			{"`kafka`, json, lz4", "kafka", "BenchmarkKafkaExport/kafka/json/lz4", []measure{perSecond, perRecord}},
			{"`kafka`, otlp_proto, none", "kafka", "BenchmarkKafkaExport/kafka/otlp_proto/none", []measure{perSecond, perRecord}},
			{"`kafka`, otlp_proto, zstd", "kafka", "BenchmarkKafkaExport/kafka/otlp_proto/zstd", []measure{perSecond, perRecord}},
			{"contrib `file`, OTLP JSON (kafka run)", "kafka", "BenchmarkKafkaExport/file/json", []measure{perSecond, perRecord}},
			{"contrib `file`, OTLP JSON, zstd (kafka run)", "kafka", "BenchmarkKafkaExport/file/json+zstd", []measure{perSecond, perRecord}},
		},
	},
	{
		Title: "`s3` objects queried by DuckDB",
		About: "1,000,000 records (800,000 kyverno Pod Security Standards and trivy vulnerability results in 3 clusters, then a later " +
			"record of 200,000 of them: changed or resolved) through the `s3` exporter in batches of 10,000 into MinIO, partitioned by " +
			"cluster and hour; copied to local disk (DuckDB's `httpfs` extension cannot be downloaded here) and read by DuckDB as a " +
			"library, on the same 2 cores. Each query reads every object, keeps the latest record of each result and is checked against " +
			"the input; its time is the mean of 3 runs.",
		Rows: []row{
			{"JSON lines, gzip", "s3query", "BenchmarkS3Query/ndjson-gzip", s3QueryMeasures},
			{"Parquet, zstd", "s3query", "BenchmarkS3Query/parquet-zstd", s3QueryMeasures},
		},
	},
	{
		Title: "`results_grpc` exporter into the reference results server",
		About: "The exporter (created by its factory, no queue) forwards batches of 5,000 results over real gRPC (loopback, plaintext) " +
			"to the in-process `results-server` library, which checks every hash and stores each result in its current-state and " +
			"history tables; everything on the same 2 cores. The exporter's own work (convert, split, encode) is `BenchmarkEncode`.",
		Rows: []row{
			{"SQLite (WAL, pure Go driver), 1,000 results per request", "resultsgrpc", "BenchmarkResultsGRPC/sqlite/per_request=1000", []measure{perSecond}},
			{"SQLite, 100 results per request", "resultsgrpc", "BenchmarkResultsGRPC/sqlite/per_request=100", []measure{perSecond}},
			{"PostgreSQL (local), 1,000 results per request", "resultsgrpc", "BenchmarkResultsGRPC/postgres/per_request=1000", []measure{perSecond}},
			{"PostgreSQL, 100 results per request", "resultsgrpc", "BenchmarkResultsGRPC/postgres/per_request=100", []measure{perSecond}},
			{"the exporter's own work: convert, split into requests of 1,000, encode", "resultsgrpc-encode", "BenchmarkEncode", []measure{perSecond, perRecord}},
		},
	},
	{
		Title: "results-server: ingest and the fleet view at a million results",
		About: "`BenchmarkIngest` calls the Forward handler with requests as the exporter sends them (1,000 results: 700 new keys and " +
			"300 changed outcomes), one at a time and from 4 senders at once, into SQLite (pure Go driver, WAL, fsync per request) and " +
			"PostgreSQL 15 (local, run with fsync off by the tests' harness); the database on the same 2 cores. `BenchmarkFailingPage` " +
			"renders pages through the HTTP handler (query and template) from 1,000,000 current results (3 clusters, 45 % failing) and " +
			"1,000,000 history rows.",
		Rows: resultsServerRows(),
	},
	{
		Title: "`k8s_reports`: 10,000 PolicyReports",
		About: "10,000 Pod Security Standards-shaped PolicyReports (19 results each, about 6 KB) in a real kube-apiserver + etcd on " +
			"the same 2-core machine; the distribution binary with `k8s_reports` (state in `file_storage`) → `durable_file`; then one " +
			"result changed in each of 1,000 reports. Each run is a fresh collector against the same API server; the setups' runs alternate.",
		Rows: k8sReportsRows(),
	},
	{
		Title: "`k8s_reports`: 50,000 PolicyReports",
		About: "The same benchmark at 50,000 reports (950,000 results, in 50 namespaces), once, with the persistent queue and " +
			"`GOMEMLIMIT=200MiB` (about 80% of a 256 MB container limit).",
		Rows: k8sReportsScaleRows(),
	},
	{
		Title: "`decision_logs`: decisions per second next to the `otlp` receiver",
		About: "The distribution binary, one collector per run: 300,000 Gatekeeper admission messages (~700 B) over one Unix socket " +
			"from 8 connections; the same number of OPA decision events (~700 B) as gzip uploads of 500 events from 8 clients; and, in " +
			"the same collector, the core `otlp` receiver taking 300,000 records of the same decisions as OTLP/HTTP JSON requests of " +
			"500 records. All into the `debug` exporter; the load generator runs on the same two cores.",
		Rows: []row{
			{"NDJSON over a Unix socket", "decisionlogs", "BenchmarkDecisionLogs", []measure{
				{Unit: "ndjson-decisions/s", Label: "decisions/s", Target: &target{Text: "≥ 100,000/s", Stat: "min", Limit: 100_000}},
				{Label: "ratio to OTLP/HTTP JSON, per run", Derive: ratio("ndjson-decisions/s", "otlp-records/s"), Target: &target{Text: "≥ 1", Stat: "median", Limit: 1}},
			}},
			{"OPA gzip uploads over HTTP", "decisionlogs", "BenchmarkDecisionLogs", []measure{
				{Unit: "opa-decisions/s", Label: "decisions/s"},
				{Label: "ratio to OTLP/HTTP JSON, per run", Derive: ratio("opa-decisions/s", "otlp-records/s"), Target: &target{Text: "≥ 1", Stat: "median", Limit: 1}},
			}},
			{"core `otlp` receiver, OTLP/HTTP JSON", "decisionlogs", "BenchmarkDecisionLogs", []measure{{Unit: "otlp-records/s", Label: "records/s"}}},
			{"collector peak RSS over the run", "decisionlogs", "BenchmarkDecisionLogs", []measure{{Unit: "peak-rss-MB", Label: "MB"}}},
		},
	},
	{
		Title: "`decision_logs`: Gatekeeper's disk export next to the NDJSON socket",
		About: "The distribution binary, one collector per run: 250,000 Gatekeeper audit violations (`violation_audited`, ~700 B) " +
			"over one Unix socket from 8 connections (the path of the former `socat` recipe), timed until the receiver accepted " +
			"them all; then the same violations as five complete audit runs of 50,000 (written to `.txt` under `flock` " +
			"beforehand, all renamed to `.log` at once: the most Gatekeeper keeps) read by `gatekeeper_export` (`poll_interval: " +
			"100ms`, its position in `file_storage` as the shipped sidecar config keeps it), timed from the first batch accepted " +
			"(the wait for the poll is the latency's) until all were; then ten runs of 10,000 renamed to `.log` one at a time, " +
			"timed from the rename until the `debug` exporter sent the run's last record (self-metrics read every 10 ms). The " +
			"load generator runs on the same two cores.",
		Rows: []row{
			{"NDJSON over a Unix socket", "gatekeeperexport", "BenchmarkGatekeeperExport", []measure{{Unit: "ndjson-violations/s", Label: "violations/s"}}},
			{"`gatekeeper_export`, five audit runs of 50,000", "gatekeeperexport", "BenchmarkGatekeeperExport", []measure{
				{Unit: "export-violations/s", Label: "violations/s"},
				{Label: "ratio to the socket path, per run", Derive: ratio("export-violations/s", "ndjson-violations/s"), Target: &target{Text: "≥ 1 × the socket path", Stat: "median", Limit: 1}},
			}},
			{"`.log` rename to the run's last record sent, runs of 10,000, `poll_interval: 100ms`", "gatekeeperexport", "BenchmarkGatekeeperExport", []measure{
				{Unit: "rename-to-sent-p50-ms", Label: "p50 of 10 runs (ms)"},
				{Unit: "rename-to-sent-max-ms", Label: "max of 10 runs (ms)"},
			}},
			{"collector peak RSS over the run", "gatekeeperexport", "BenchmarkGatekeeperExport", []measure{{Unit: "peak-rss-MB", Label: "MB"}}},
		},
	},
	{
		Title: "`decision_logs`: decoding one event",
		About: "The receiver's decoders on one event each (compacted to one NDJSON line), and `jsonpdata.SetValue` parsing an OPA " +
			"event's JSON straight into a pdata value.",
		Rows: []row{
			{"OPA decision, boolean result (500 B)", "decode", "BenchmarkDecodeOPA", []measure{micros, allocations}},
			{"OPA decision of an AdmissionReview (1.6 KB)", "decode", "BenchmarkDecodeOPAAdmission", []measure{micros, allocations}},
			{"Gatekeeper export, admission (717 B)", "decode", "BenchmarkDecodeGatekeeperExport", []measure{micros, allocations}},
			{"Gatekeeper log, audit (722 B)", "decode", "BenchmarkDecodeGatekeeperLog", []measure{micros, allocations}},
			{"generic mapping (336 B)", "decode", "BenchmarkDecodeGeneric", []measure{micros, allocations}},
			{"format `auto`, OPA admission", "decode", "BenchmarkDecodeAutoOPA", []measure{micros, allocations}},
			{"format `auto`, Gatekeeper admission", "decode", "BenchmarkDecodeAutoGatekeeper", []measure{micros, allocations}},
			{"`jsonpdata.SetValue` of an OPA event", "jsonpdata", "BenchmarkSetValue", []measure{micros, allocations}},
		},
	},
}

// k8sReportsRows are the measures of each k8sreports setup (testbed/k8sreports setups()).
func k8sReportsRows() []row {
	var rows []row
	for _, s := range []struct {
		what, name string
		rssTarget  float64 // MB; 0 for none
	}{
		{"persistent queue, Go defaults", "persistent", 128},
		{"persistent queue, `GOMEMLIMIT=100MiB`", "persistent_gomemlimit=100MiB", 128},
		{"in-memory queue, `GOMEMLIMIT=100MiB`", "memory_gomemlimit=100MiB", 0},
	} {
		rss := measure{Unit: "peak-rss-MB", Label: "collector peak RSS (MB)"}
		if s.rssTarget > 0 {
			rss.Target = &target{Text: fmt.Sprintf("≤ %.0f MB", s.rssTarget), Stat: "max", Limit: s.rssTarget, AtMost: true}
		}
		rows = append(rows, row{s.what, "k8sreports", "BenchmarkK8sReports/" + s.name, append([]measure{
			{Unit: "floor-s", Label: "LIST floor in the same run: a Go client paging through every report (s)"},
			{Unit: "sync-s", Label: "initial sync, 190,000 records exported (s)", Target: &target{Text: "≤ 30 s", Stat: "max", Limit: 30, AtMost: true}},
			{Label: "initial sync ÷ LIST floor, per run", Derive: ratio("sync-s", "floor-s"), Target: &target{Text: "≤ 1.3", Stat: "median", Limit: 1.3, AtMost: true}},
			{Unit: "receiver-sync-s", Label: "the receiver's `Initial sync complete`: every record accepted by the pipeline (s)"},
			{Label: "the receiver's sync ÷ LIST floor, per run", Derive: ratio("receiver-sync-s", "floor-s")},
			{Unit: "records/s", Label: "initial sync records/s"},
			rss,
			{Unit: "after-last-update-s", Label: "1,000 changes: last record after the last patch (s)", Target: &target{Text: "≤ 2 s", Stat: "max", Limit: 2, AtMost: true}},
			{Unit: "burst-s", Label: "1,000 changes: last record after the first patch (s)"},
		}, restartMeasures()...)})
	}
	return rows
}

// restartMeasures are those of the restart with nothing changed that ends each k8sreports run.
func restartMeasures() []measure {
	return []measure{
		{Unit: "restart-s", Label: "restart, nothing changed: process start to `Initial sync complete`, no record (s)"},
		{Label: "restart ÷ LIST floor, per run", Derive: ratio("restart-s", "floor-s"), Target: &target{Text: "≤ 2", Stat: "median", Limit: 2, AtMost: true}},
		{Unit: "restart-peak-rss-MB", Label: "restart peak RSS (MB)"},
		{Unit: "state-MB", Label: "receiver state on disk (MB)"},
		{Unit: "state-bytes/result", Label: "state on disk per result (bytes)"},
		{Unit: "heap-bytes/result", Label: "live heap after the restart, per result (bytes)"},
	}
}

// k8sReportsScaleRows are the measures of the k8sreports benchmark at 50,000 reports.
func k8sReportsScaleRows() []row {
	return []row{{"persistent queue, `GOMEMLIMIT=200MiB`", "k8sreports-50k", "BenchmarkK8sReports/persistent_gomemlimit=200MiB", append([]measure{
		{Unit: "floor-s", Label: "LIST floor in the same run (s)"},
		{Unit: "sync-s", Label: "initial sync, 950,000 records exported (s)"},
		{Label: "initial sync ÷ LIST floor", Derive: ratio("sync-s", "floor-s")},
		{Unit: "receiver-sync-s", Label: "the receiver's `Initial sync complete` (s)"},
		{Unit: "records/s", Label: "initial sync records/s"},
		{Unit: "peak-rss-MB", Label: "collector peak RSS (MB)", Target: &target{Text: "≤ 256 MB", Stat: "max", Limit: 256, AtMost: true}},
		{Unit: "after-last-update-s", Label: "1,000 changes: last record after the last patch (s)"},
	}, restartMeasures()...)}}
}

// resultsServerRows are the ingest and page rows of both databases.
func resultsServerRows() []row {
	var rows []row
	ingest := measure{Unit: "results/s", Target: &target{Text: "≥ 50,000/s", Stat: "median", Limit: 50_000}}
	page := measure{Unit: "ms/page", Target: &target{Text: "≤ 200 ms", Stat: "max", Limit: 200, AtMost: true}}
	for _, db := range []struct{ name, title string }{{"sqlite", "SQLite"}, {"postgres", "PostgreSQL"}} {
		rows = append(rows,
			row{db.title + ": ingest, one request at a time", "resultsserver-ingest", "BenchmarkIngest/" + db.name + "/sequential", []measure{ingest}},
			row{db.title + ": ingest, 4 senders", "resultsserver-ingest", "BenchmarkIngest/" + db.name + "/concurrent", []measure{ingest}})
		for _, p := range []struct{ bench, what string }{
			{"failing", "failing list, first page"},
			{"failing_page_100", "failing list, page 100"},
			{"failing_cluster", "failing list, one cluster"},
			{"failing_policy", "failing list, one policy"},
			{"failing_namespace_severity", "failing list, one namespace and severity"},
			{"failing_score_fixable", "failing list, score ≥ 8 and fixable"},
			{"failing_text", "failing list, text matching a few results"},
		} {
			rows = append(rows, row{db.title + ": " + p.what, "resultsserver-pages", "BenchmarkFailingPage/" + db.name + "/" + p.bench, []measure{page}})
		}
		rows = append(rows,
			row{db.title + ": one result", "resultsserver-pages", "BenchmarkFailingPage/" + db.name + "/result", []measure{{Unit: "ms/page"}}},
			row{db.title + ": fleet overview (groups every result)", "resultsserver-pages", "BenchmarkFailingPage/" + db.name + "/overview", []measure{{Unit: "ms/page"}}},
			row{db.title + ": 30-day trend (walks 1,000,000 history rows)", "resultsserver-pages", "BenchmarkFailingPage/" + db.name + "/trend", []measure{{Unit: "ms/page"}}})
	}
	return rows
}
