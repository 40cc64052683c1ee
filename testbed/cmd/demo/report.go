// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/dashboards"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
)

// report is what each destination holds.
type report struct {
	// durable_file: records by event name, results by source and by report kind; the results current at the
	// end (distinct keys whose last record is not "resolved"); a result can have several records, such as a
	// ComplianceRemediation seen before and after its controller set its status.
	fileByEvent, fileBySource, fileByReportKind map[string]int
	fileCurrent                                 int
	// s3: objects and lines (records) by event name; an example key.
	s3Objects int
	s3ByEvent map[string]int
	s3Key     string
	// kafka: records by event name, one example value per event name.
	kafkaByEvent  map[string]int
	kafkaExamples map[string]string
	// results server: current results of the fleet view.
	fleet fleetCounts
	// file/metrics: requests (lines) and the metric names in them.
	metricLines int
	metricNames map[string]int
	// prometheus: the current results by outcome (sum by (policy_result) (policy_results)), the decisions by
	// result and action, and what the collector's exporter says it sent.
	promResults   map[string]int
	promDecisions map[string]int
	promSent      int
	// the collector's own counters of what it bounded or could not do: rejected decision inputs by listener and
	// reason, report receiver faults by kind and reason, failed sends by exporter.
	promRejected, promFaults, promSendFailed map[string]int
	// errors reading a destination, by destination.
	errs map[string]error
}

type fleetCounts struct {
	Cluster                              string
	Pass, Fail, Warn, Error, Skip, Total int
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// complete says whether every destination has every record: all decisions, the results and at least one
// summary in the file, the same records in S3 and Kafka, every result in the results server, and metrics.
func (r *report) complete(wantDecisions int) bool {
	total := sum(r.fileByEvent)
	results := r.fileByEvent[policyresult.EventResult]
	return results > 0 && r.fileByEvent[policyresult.EventDecision] >= wantDecisions && r.fileByEvent[policyresult.EventSummary] > 0 &&
		sum(r.s3ByEvent) == total && sum(r.kafkaByEvent) == total &&
		r.fleet.Total == r.fileCurrent &&
		r.metricNames[policyresult.MetricResults] > 0 && r.metricNames[policyresult.MetricDecisions] > 0 &&
		sum(r.promResults) == r.fleet.Total && sum(r.promDecisions) == wantDecisions
}

// waitReport reads every destination until complete or timeout, and returns the last reading.
func waitReport(ctx context.Context, e env, st state, wantDecisions int, timeout time.Duration) *report {
	deadline := time.Now().Add(timeout)
	var r *report
	lastTotal := -1
	for {
		r = readReport(ctx, e, st)
		if r.complete(wantDecisions) {
			// Give late summaries of the same interval a moment, once, then stop when nothing changes.
			if total := sum(r.fileByEvent); total == lastTotal {
				return r
			} else {
				lastTotal = total
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return r
		}
		time.Sleep(2 * time.Second)
	}
}

func readReport(ctx context.Context, e env, st state) *report {
	r := &report{errs: map[string]error{}}
	if err := readFile(e, r); err != nil {
		r.errs["durable_file"] = err
	}
	if err := readS3(ctx, st, r); err != nil {
		r.errs["s3"] = err
	}
	if err := readKafka(ctx, st, r); err != nil {
		r.errs["kafka"] = err
	}
	if err := readFleet(st, r); err != nil {
		r.errs["results_grpc"] = err
	}
	if err := readMetrics(e, r); err != nil {
		r.errs["file/metrics"] = err
	}
	if err := readPrometheus(st, r); err != nil {
		r.errs["prometheus_remote_write"] = err
	}
	return r
}

func resultsFile(e env) string { return e.path("results", "policy-results.jsonl") }
func metricsFile(e env) string { return e.path("policy-metrics.jsonl") }

// eachLine calls f for each line of a file; a missing file has none.
func eachLine(path string, f func([]byte) error) error {
	file, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if err := f(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

func readFile(e env, r *report) error {
	r.fileByEvent, r.fileBySource, r.fileByReportKind = map[string]int{}, map[string]int{}, map[string]int{}
	lastState := map[string]string{}
	defer func() {
		r.fileCurrent = 0
		for _, s := range lastState {
			if s != "resolved" {
				r.fileCurrent++
			}
		}
	}()
	return eachLine(resultsFile(e), func(line []byte) error {
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(line)
		if err != nil {
			return err
		}
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					ev := policyresult.EventName(lr)
					r.fileByEvent[ev]++
					if ev != policyresult.EventResult {
						continue
					}
					if v, ok := lr.Attributes().Get(policyresult.AttrSource); ok {
						r.fileBySource[v.Str()]++
					}
					if k, ok := lr.Attributes().Get(policyresult.AttrResultKey); ok {
						st, _ := lr.Attributes().Get(policyresult.AttrResultState)
						lastState[k.Str()] = st.Str()
					}
					if v, ok := lr.Attributes().Get(policyresult.AttrReportKind); ok {
						r.fileByReportKind[v.Str()]++
					}
				}
			}
		}
		return nil
	})
}

func readS3(ctx context.Context, st state, r *report) error {
	r.s3ByEvent = map[string]int{}
	client := s3Client(st.Ports)
	var token *string
	for {
		list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket), ContinuationToken: token})
		if err != nil {
			return err
		}
		for _, obj := range list.Contents {
			r.s3Objects++
			if r.s3Key == "" || strings.Contains(*obj.Key, policyresult.EventResult) {
				r.s3Key = *obj.Key
			}
			if err := s3Lines(ctx, client, st.Bucket, *obj.Key, func(line map[string]any) {
				ev, _ := line["event_name"].(string)
				r.s3ByEvent[ev]++
			}); err != nil {
				return err
			}
		}
		if list.IsTruncated == nil || !*list.IsTruncated {
			return nil
		}
		token = list.NextContinuationToken
	}
}

func s3Lines(ctx context.Context, client *s3.Client, bucket, key string, f func(map[string]any)) error {
	got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	defer got.Body.Close()
	var rd io.Reader = got.Body
	if strings.HasSuffix(key, ".gz") {
		gz, err := gzip.NewReader(got.Body)
		if err != nil {
			return err
		}
		rd = gz
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		f(line)
	}
	return sc.Err()
}

// readKafka consumes the topic from the start up to its high watermark.
func readKafka(ctx context.Context, st state, r *report) error {
	r.kafkaByEvent, r.kafkaExamples = map[string]int{}, map[string]string{}
	exampleScore := map[string]int{}
	client, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:"+strconv.Itoa(st.Ports.Kafka)), kgo.ConsumeTopics(st.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer client.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fetches := client.PollFetches(pctx)
		cancel()
		if pctx.Err() != nil && fetches.NumRecords() == 0 {
			return nil // nothing more within 3 s: caught up (or empty)
		}
		var fetchErr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fetchErr = err
			}
		})
		if fetchErr != nil {
			return fetchErr
		}
		caughtUp := true
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, rec := range p.Records {
				var line map[string]any
				if err := json.Unmarshal(rec.Value, &line); err != nil {
					continue
				}
				ev, _ := line["event_name"].(string)
				r.kafkaByEvent[ev]++
				// Examples: a failing result, a denial by OPA, any summary.
				score := 0
				if line[policyresult.AttrResult] == string(policyresult.OutcomeFail) {
					score++
				}
				if line[policyresult.AttrSource] == "opa" {
					score += 2
				}
				if _, ok := r.kafkaExamples[ev]; !ok || score > exampleScore[ev] {
					r.kafkaExamples[ev], exampleScore[ev] = string(rec.Value), score
				}
				if rec.Offset+1 < p.HighWatermark {
					caughtUp = false
				}
			}
		})
		if caughtUp {
			return nil
		}
	}
}

func readFleet(st state, r *report) error {
	resp, err := httpClient.Get("http://127.0.0.1:" + strconv.Itoa(st.Ports.ResultsHTTP) + "/v1/fleet")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fleet view: %s", resp.Status)
	}
	var fleet struct{ Clusters []fleetCounts }
	if err := json.NewDecoder(resp.Body).Decode(&fleet); err != nil {
		return err
	}
	r.fleet = fleetCounts{}
	for _, c := range fleet.Clusters {
		if c.Cluster == "demo" {
			r.fleet = c
		}
	}
	return nil
}

func readMetrics(e env, r *report) error {
	r.metricLines, r.metricNames = 0, map[string]int{}
	return eachLine(metricsFile(e), func(line []byte) error {
		md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(line)
		if err != nil {
			return err
		}
		r.metricLines++
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					switch m.Type() {
					case pmetric.MetricTypeGauge:
						r.metricNames[m.Name()] += m.Gauge().DataPoints().Len()
					case pmetric.MetricTypeSum:
						r.metricNames[m.Name()] += m.Sum().DataPoints().Len()
					default:
						r.metricNames[m.Name()]++
					}
				}
			}
		}
		return nil
	})
}

// The queries the report shows, as a user would type them.
const (
	queryResults   = `sum by (policy_result) (policy_results)`
	queryDecisions = `sum by (policy_result, policy_decision_action) (policy_decisions_total)`
	querySent      = `sum(otelcol_exporter_sent_metric_points{exporter="prometheus_remote_write"})`
	queryRejected  = `sum by (listener, reason) (otelcol_receiver_decision_logs_rejected)`
	queryFaults    = `sum by (kind, reason) (otelcol_receiver_k8s_reports_errors)`
	querySendFail  = `sum by (exporter) (otelcol_exporter_send_failed_metric_points)`
)

// readPrometheus asks the demo's Prometheus, over its HTTP API, what the collector wrote to it and scraped from it.
func readPrometheus(st state, r *report) error {
	prom := promtest.New(prometheusURL(st.Ports))
	r.promResults, r.promDecisions, r.promSent = map[string]int{}, map[string]int{}, 0
	results, err := prom.Query(queryResults)
	if err != nil {
		return err
	}
	for _, s := range results {
		r.promResults[s.Labels["policy_result"]] = int(s.Value)
	}
	decisions, err := prom.Query(queryDecisions)
	if err != nil {
		return err
	}
	for _, s := range decisions {
		key := s.Labels["policy_result"]
		if a := s.Labels["policy_decision_action"]; a != "" {
			key += "/" + a
		}
		r.promDecisions[key] = int(s.Value)
	}
	sent, err := prom.Query(querySent)
	if err != nil {
		return err
	}
	if len(sent) == 1 {
		r.promSent = int(sent[0].Value)
	}
	for q, m := range map[string]*map[string]int{queryRejected: &r.promRejected, queryFaults: &r.promFaults, querySendFail: &r.promSendFailed} {
		if *m, err = queryBy(prom, q); err != nil {
			return err
		}
	}
	return nil
}

// queryBy runs promql and returns its values keyed by the values of its labels, joined by "/" in name order.
func queryBy(prom *promtest.Server, promql string) (map[string]int, error) {
	samples, err := prom.Query(promql)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, s := range samples {
		names := make([]string, 0, len(s.Labels))
		for n := range s.Labels {
			names = append(names, n)
		}
		sort.Strings(names)
		vals := make([]string, 0, len(names))
		for _, n := range names {
			vals = append(vals, s.Labels[n])
		}
		out[strings.Join(vals, "/")] = int(s.Value)
	}
	return out, nil
}

// byLine formats counts as "policy.result 31, policy.decision 9".
func byLine(m map[string]int, order ...string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		for i, o := range order {
			if o == k {
				return i
			}
		}
		return len(order)
	}
	sort.Slice(keys, func(i, j int) bool {
		if rank(keys[i]) != rank(keys[j]) {
			return rank(keys[i]) < rank(keys[j])
		}
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func outcomeNames() []string {
	out := make([]string, 0, len(policyresult.Outcomes))
	for _, o := range policyresult.Outcomes {
		out = append(out, string(o))
	}
	return out
}

var events = []string{policyresult.EventResult, policyresult.EventScan, policyresult.EventDecision, policyresult.EventSummary}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func printReport(e env, st state, r *report, b binaries) {
	p := st.Ports
	fmt.Println()
	fmt.Println("==================== where the records went ====================")
	row := func(dest, where, what string) { fmt.Printf("%-13s %-44s %s\n", dest, where, what) }
	row("DESTINATION", "WHERE", "RECORDS")
	row("durable_file", e.rel(resultsFile(e)), fmt.Sprintf("%d: %s (%d distinct results)", sum(r.fileByEvent), byLine(r.fileByEvent, events...), r.fileCurrent))
	row("s3", fmt.Sprintf("MinIO 127.0.0.1:%d bucket %s", p.MinIO, st.Bucket), fmt.Sprintf("%d in %d objects: %s", sum(r.s3ByEvent), r.s3Objects, byLine(r.s3ByEvent, events...)))
	row("kafka", fmt.Sprintf("127.0.0.1:%d topic %s", p.Kafka, st.Topic), fmt.Sprintf("%d: %s", sum(r.kafkaByEvent), byLine(r.kafkaByEvent, events...)))
	row("results_grpc", fmt.Sprintf("results server 127.0.0.1:%d", p.ResultsGRPC), fmt.Sprintf("%d current results in cluster demo (policy.result only): pass %d, fail %d, warn %d, error %d, skip %d",
		r.fleet.Total, r.fleet.Pass, r.fleet.Fail, r.fleet.Warn, r.fleet.Error, r.fleet.Skip))
	row("file/metrics", e.rel(metricsFile(e)), fmt.Sprintf("%d metrics requests: data points %s", r.metricLines, byLine(r.metricNames)))
	row("prometheus", prometheusURL(p)+" (remote write)", fmt.Sprintf("policy_results %d current results, policy_decisions_total %d decisions",
		sum(r.promResults), sum(r.promDecisions)))
	for dest, err := range r.errs {
		fmt.Printf("!! %s: %v\n", dest, err)
	}
	fmt.Println()
	fmt.Println("results by source:     ", byLine(r.fileBySource))
	fmt.Println("results by report kind:", byLine(r.fileByReportKind))
	if r.s3Key != "" {
		fmt.Println("an S3 object:          ", r.s3Key)
	}

	fmt.Println()
	fmt.Println("---- example records (JSON lines as in S3 and Kafka, truncated) ----")
	for _, ev := range events {
		if ex, ok := r.kafkaExamples[ev]; ok {
			fmt.Printf("%s:\n  %s\n", ev, truncate(ex, 600))
		}
	}

	fmt.Println()
	fmt.Printf("---- Prometheus %s: PromQL over the HTTP API ----\n", prometheusURL(p))
	fmt.Printf("%-70s %s\n", queryResults, byLine(r.promResults, outcomeNames()...))
	fmt.Printf("%-70s %s\n", queryDecisions, byLine(r.promDecisions))
	fmt.Printf("%-70s %d (the collector's own metrics, scraped)\n", querySent, r.promSent)
	fmt.Printf("%-70s %s (the upload of %d events)\n", queryRejected, byLine(r.promRejected), floodEvents)
	fmt.Printf("%-70s %s (samples/45-malformed.yaml)\n", queryFaults, byLine(r.promFaults))
	fmt.Printf("%-70s %s (points of the writes during the outage)\n", querySendFail, byLine(r.promSendFailed))
	printDashboards(e, p)
	printLogStore(st)

	fmt.Println()
	fmt.Printf("---- fleet view: %s fleet --db sqlite://%s --limit 10 ----\n", e.rel(b.resultsServer), e.rel(e.path("results.db")))
	out, err := exec.Command(b.resultsServer, "fleet", "--db", resultsDSN(e), "--limit", "10").CombinedOutput()
	fmt.Print(string(out))
	if err != nil {
		fmt.Println("!! fleet:", err)
	}
}

// runDashboards runs every panel query of the chart's Grafana dashboards against the demo's Prometheus, the
// variables at All, and returns how many answer and the others.
func runDashboards(e env, p ports) (answered, total int, empty []string, err error) {
	all, err := dashboards.Load(filepath.Join(e.root, dashboards.Dir))
	if err != nil {
		return 0, 0, nil, err
	}
	prom := promtest.New(prometheusURL(p))
	for _, d := range all {
		for _, a := range d.Run(prom, d.All(), "5m") {
			total++
			if a.Answered() {
				answered++
			} else if a.Err != nil {
				empty = append(empty, a.String())
			} else {
				empty = append(empty, a.Dashboard+" "+a.Query.String())
			}
		}
	}
	return answered, total, empty, nil
}

// printDashboards says how many panel queries answer and lists the others.
func printDashboards(e env, p ports) {
	answered, total, empty, err := runDashboards(e, p)
	if err != nil {
		fmt.Println("!! dashboards:", err)
		return
	}
	fmt.Printf("dashboards (%s): %d of %d panel queries answer\n", dashboards.Dir, answered, total)
	for _, q := range empty {
		fmt.Printf("  no data: %s\n", q)
	}
}

func printHints(e env, st state) {
	p := st.Ports
	fmt.Printf(`
Look further (docs/demo.md has more):
  the fleet, in a browser      http://127.0.0.1:%d/
  logs of every process        ls %s
  the records, as the file     head -c 2000 %s
  the fleet view over HTTP     curl -s http://127.0.0.1:%d/v1/fleet/failing?limit=5
  Prometheus (PromQL)          curl -sG %s/api/v1/query --data-urlencode 'query=policy_results{policy_result="fail"} > 0'
  the scrape endpoint          curl -s %s
  VictoriaLogs (LogsQL)        curl -s %s/select/logsql/query --data-urlencode 'query={event_name="policy.result"} policy.result:=fail' | head -3
  the cluster                  KUBECONFIG=%s kubectl get policyreports,vulnerabilityreports -A
  OPA's policy                 curl -s http://127.0.0.1:%d/v1/policies
  the Kafka topic              go run ./testbed/cmd/demo consume
  MinIO console                http://127.0.0.1:%d  (%s / %s)
  this report again            go run ./testbed/cmd/demo status
Stop: make demo-stop (the data stays in %s; rm -rf it to delete).
`, p.ResultsHTTP, e.rel(e.path("logs")), e.rel(resultsFile(e)), p.ResultsHTTP, prometheusURL(p), policyMetricsURL(p), victoriaLogsURL(p),
		e.rel(e.path("kubeconfig")), p.OPA, p.MinIOConsole,
		st.MinIOUser, st.MinIOPassword, e.rel(e.dir))
}

// status shows the recorded processes and reads every destination again.
func status() error {
	e, err := findEnv()
	if err != nil {
		return err
	}
	procs, err := readPids(e)
	if err != nil {
		return err
	}
	if len(procs) == 0 {
		fmt.Println("demo: nothing is running (make demo starts it)")
		return nil
	}
	fmt.Println("PROCESS          PID      STATE     LOG")
	running := 0
	for _, p := range procs {
		s := "stopped"
		if groupAlive(e, p) {
			s, running = "running", running+1
		}
		fmt.Printf("%-16s %-8d %-9s %s\n", p.name, p.pid, s, e.rel(logPath(e, p.name)))
	}
	if running < len(procs) {
		fmt.Println("\nsome processes are not running: the report may be incomplete")
	}
	st, err := readState(e)
	if err != nil {
		return err
	}
	bins, err := findBinaries(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	printReport(e, st, readReport(ctx, e, st), bins)
	printHints(e, st)
	return nil
}
