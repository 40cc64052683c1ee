// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/miniotest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/opatest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/promtest"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/vlogstest"
)

type binaries struct {
	collector, resultsServer, opa, minio, prometheus, victoriaLogs string
}

func findBinaries(e env) (binaries, error) {
	b := binaries{
		collector:     filepath.Join(e.root, "bin", "otelcol-policy"),
		resultsServer: filepath.Join(e.root, "bin", "results-server"),
		opa:           testproc.CachedBinary("opa", opatest.Version),
		minio:         testproc.CachedBinary("minio", miniotest.MinIOVersion),
		prometheus:    promtest.BinaryPath(),
		victoriaLogs:  vlogstest.BinaryPath(),
	}
	for _, p := range []string{b.collector, b.resultsServer} {
		if !exists(p) {
			return b, fmt.Errorf("%s not found: run `make build` (make demo does)", p)
		}
	}
	for _, p := range []string{b.opa, b.minio, b.prometheus, b.victoriaLogs} {
		if !exists(p) {
			return b, fmt.Errorf("%s not found: run `make test-servers` (make demo does)", p)
		}
	}
	return b, nil
}

// step prints what is being done and how long it took.
func step(what string, f func() error) error {
	fmt.Printf("  %-72s", what+" …")
	t := time.Now()
	if err := f(); err != nil {
		fmt.Println(" failed")
		return err
	}
	fmt.Printf(" %5.1fs\n", time.Since(t).Seconds())
	return nil
}

func up() (err error) {
	e, err := findEnv()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if procs, err := runningProcs(e); err != nil {
		return err
	} else if len(procs) > 0 {
		names := make([]string, 0, len(procs))
		for _, p := range procs {
			names = append(names, fmt.Sprintf("%s (pid %d)", p.name, p.pid))
		}
		return fmt.Errorf("a demo is already running: %s\nstop it first with `make demo-stop`", strings.Join(names, ", "))
	}
	bins, err := findBinaries(e)
	if err != nil {
		return err
	}
	// Every run starts from an empty ./data/demo: the samples then produce the same records each time.
	if exists(e.dir) {
		fmt.Printf("demo: removing the previous run's %s\n", e.rel(e.dir))
		if err := os.RemoveAll(e.dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		return err
	}
	p, moved, err := choosePorts()
	if err != nil {
		return err
	}
	for _, m := range moved {
		fmt.Println("demo:", m)
	}
	st := state{Ports: p, MinIOUser: minioUser, MinIOPassword: minioPassword, Bucket: bucket, Topic: topic}
	if err := writeState(e, st); err != nil {
		return err
	}
	keep := false
	defer func() {
		if err != nil && !keep {
			fmt.Println("demo: stopping what was started; the logs stay in", e.rel(e.path("logs")))
			_ = stopAll(e, true)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	fmt.Printf("demo: starting in %s (ports in %s)\n", e.rel(e.dir), e.rel(e.path("ports.json")))
	if err := step(fmt.Sprintf("etcd :%d + kube-apiserver :%d", p.EtcdClient, p.APIServer), func() error { return startKube(e, p) }); err != nil {
		return err
	}
	var crdCount int
	var withStatus map[schema.GroupKind]bool
	if err := step("report CRDs from "+crdDir, func() error {
		var err error
		withStatus, crdCount, err = installCRDs(ctx, e, p)
		return err
	}); err != nil {
		return err
	}
	// The other servers start at once and are waited for one by one.
	if err := step(fmt.Sprintf("MinIO :%d, Kafka :%d, results server :%d, OPA :%d, Prometheus :%d, VictoriaLogs :%d", p.MinIO, p.Kafka, p.ResultsGRPC, p.OPA, p.Prometheus, p.VictoriaLogs), func() error {
		return startServers(ctx, e, p, bins)
	}); err != nil {
		return err
	}
	if err := step("bucket "+bucket+" in MinIO", func() error {
		_, err := s3Client(p).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		return err
	}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("collector (validate, start, health :%d)", p.CollectorHealth), func() error {
		return startCollector(ctx, e, p, bins)
	}); err != nil {
		return err
	}

	fmt.Println("demo: sending data")
	var kinds map[string]int
	if err := step(fmt.Sprintf("%d CRDs served; sample reports (testbed/cmd/demo/samples)", crdCount), func() error {
		var err error
		kinds, err = applySamples(ctx, e, p, withStatus)
		return err
	}); err != nil {
		return err
	}
	fmt.Println("    applied:", countsLine(kinds))
	var opaIDs []string
	if err := step("OPA decisions (data.demo.admission.decision)", func() error {
		var err error
		opaIDs, err = askOPA(ctx, p)
		return err
	}); err != nil {
		return err
	}
	if err := step("Gatekeeper violations on "+e.rel(e.path("decisions.sock")), func() error {
		return sendGatekeeper(e)
	}); err != nil {
		return err
	}
	wantDecisions := len(opaIDs) + len(gatekeeperLines())

	// Over time: Prometheus counts an increase from a counter's second sample on, so a second round of
	// decisions after the first emission reached it is what the dashboards' denied share is made of.
	if err := step(fmt.Sprintf("policy_metrics' first emission in Prometheus (%d decisions)", wantDecisions), func() error {
		return waitDecisionsInPrometheus(ctx, p, wantDecisions, 60*time.Second)
	}); err != nil {
		return err
	}
	if err := step("OPA decisions, a second round", func() error {
		ids, err := askOPA(ctx, p)
		opaIDs = append(opaIDs, ids...)
		return err
	}); err != nil {
		return err
	}
	wantDecisions = len(opaIDs) + len(gatekeeperLines())

	// Bad input and a failing destination: what the collector bounds and counts.
	fmt.Println("demo: bad input and an outage")
	var flood string
	if err := step(fmt.Sprintf("an upload of %d decision events to the OPA endpoint", floodEvents), func() error {
		var err error
		flood, err = floodOPA(ctx, p)
		return err
	}); err != nil {
		return err
	}
	fmt.Println("   ", flood)
	if err := step("Prometheus stopped until a remote write fails, started again", func() error {
		return prometheusOutage(ctx, e, p, bins)
	}); err != nil {
		return err
	}

	fmt.Println("demo: waiting for the records at every destination (at most 90 s)")
	r := waitReport(ctx, e, st, wantDecisions, 90*time.Second)
	if r.complete(wantDecisions) {
		// The rates and increases of the panels need a second sample after the outage: 2 scrapes, 10 s.
		_ = pollUntil(ctx, "every panel query answers", 30*time.Second, func() (bool, error) {
			answered, total, _, err := runDashboards(e, p)
			return err == nil && answered == total, err
		})
	}
	printReport(e, st, r, bins)
	fmt.Printf("\ndemo: up in %.0fs. Everything keeps running in the background; `make demo-stop` stops it.\n", time.Since(t0).Seconds())
	printHints(e, st)
	if !r.complete(wantDecisions) {
		// Left running for a look: `demo status` reads the destinations again.
		keep = true
		return fmt.Errorf("not every destination got every record within 90 s (see the logs in %s, `go run ./testbed/cmd/demo status` reads them again); the demo is still running: `make demo-stop` stops it", e.rel(e.path("logs")))
	}
	return nil
}

// startServers starts MinIO, the Kafka-protocol broker, the results server, OPA and Prometheus, and waits until
// each one answers.
func startServers(ctx context.Context, e env, p ports, b binaries) error {
	if _, err := start(e, "minio", []string{
		"MINIO_ROOT_USER=" + minioUser, "MINIO_ROOT_PASSWORD=" + minioPassword,
		"MINIO_UPDATE=off", "MINIO_CI_CD=on", "MINIO_BROWSER=on",
	}, b.minio, "server", e.path("minio"),
		"--address", "127.0.0.1:"+strconv.Itoa(p.MinIO), "--console-address", "127.0.0.1:"+strconv.Itoa(p.MinIOConsole), "--quiet"); err != nil {
		return err
	}
	self := e.path("bin", "demo")
	if err := copyExecutable(self); err != nil {
		return err
	}
	if _, err := start(e, "kafka", nil, self, "kafka", "--port", strconv.Itoa(p.Kafka), "--dir", e.path("kafka")); err != nil {
		return err
	}
	if _, err := start(e, "results-server", nil, b.resultsServer, "serve",
		"--listen", "127.0.0.1:"+strconv.Itoa(p.ResultsGRPC), "--http-listen", "127.0.0.1:"+strconv.Itoa(p.ResultsHTTP),
		"--db", resultsDSN(e)); err != nil {
		return err
	}
	opaDir := e.path("opa")
	if err := os.MkdirAll(opaDir, 0o755); err != nil {
		return err
	}
	policy, _ := files.ReadFile("policy.rego")
	if err := os.WriteFile(filepath.Join(opaDir, "policy.rego"), policy, 0o644); err != nil {
		return err
	}
	opaCfg := fmt.Sprintf(`# OPA's configuration in the demo: every decision is uploaded to the collector's decision_logs receiver.
services:
  collector:
    url: http://127.0.0.1:%d
decision_logs:
  service: collector
  resource: /logs
  reporting:
    min_delay_seconds: 1
    max_delay_seconds: 2
`, p.DecisionLogs)
	if err := os.WriteFile(filepath.Join(opaDir, "config.yaml"), []byte(opaCfg), 0o644); err != nil {
		return err
	}
	if _, err := start(e, "opa", nil, b.opa, "run", "--server", "--skip-version-check",
		"--addr", "127.0.0.1:"+strconv.Itoa(p.OPA), "--config-file", filepath.Join(opaDir, "config.yaml"),
		filepath.Join(opaDir, "policy.rego")); err != nil {
		return err
	}
	if err := startPrometheus(e, p, b); err != nil {
		return err
	}
	if err := startVictoriaLogs(e, p, b); err != nil {
		return err
	}

	base := "http://127.0.0.1:"
	checks := []struct {
		name  string
		ready func() error
	}{
		{"minio", func() error { return httpOK(base + strconv.Itoa(p.MinIO) + "/minio/health/ready") }},
		{"kafka", func() error { return dial(p.Kafka) }},
		{"results-server", func() error { return httpOK(base + strconv.Itoa(p.ResultsHTTP) + "/v1/fleet") }},
		{"opa", func() error { return httpOK(base + strconv.Itoa(p.OPA) + "/health") }},
		{"prometheus", promtest.New(prometheusURL(p)).Ready},
		{"victoria-logs", vlogstest.New(victoriaLogsURL(p)).Ready},
	}
	for _, c := range checks {
		if err := waitReady(ctx, e, c.name, 60*time.Second, c.ready); err != nil {
			return err
		}
	}
	return nil
}

// startPrometheus starts Prometheus with its remote write receiver on, for the collector's prometheus_remote_write
// exporter, scraping the collector's own metrics every 5 s.
func startPrometheus(e env, p ports, b binaries) error {
	dir := e.path("prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := promtest.Config(promtest.Options{
		Targets:  []promtest.Target{{Job: "otelcol-policy", Address: "127.0.0.1:" + strconv.Itoa(p.CollectorMetrics)}},
		Interval: 5 * time.Second,
	})
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	_, err := start(e, "prometheus", nil, b.prometheus, promtest.Args(dir, "127.0.0.1:"+strconv.Itoa(p.Prometheus))...)
	return err
}

func prometheusURL(p ports) string { return "http://127.0.0.1:" + strconv.Itoa(p.Prometheus) }

func resultsDSN(e env) string { return "sqlite://" + e.path("results.db") }

// waitReady polls ready until it succeeds, the process exits or the timeout passes.
func waitReady(ctx context.Context, e env, name string, timeout time.Duration, ready func() error) error {
	exited := func() bool {
		procs, _ := runningProcs(e)
		return !hasProc(procs, name) || ctx.Err() != nil
	}
	if err := testproc.WaitReady(name, timeout, exited, ready); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%s: %w", name, ctx.Err())
		}
		return fmt.Errorf("%w; %s (tail):\n%s", err, e.rel(logPath(e, name)), logTail(e, name, 2000))
	}
	return nil
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func httpOK(url string) error {
	resp, err := httpClient.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func dial(port int) error {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

func s3Client(p ports) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:" + strconv.Itoa(p.MinIO)),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(minioUser, minioPassword, ""),
	})
}

// startCollector renders testbed/cmd/demo/collector.yaml to ./data/demo/collector.yaml, validates it with the
// binary, starts the collector and waits for its health check.
func startCollector(ctx context.Context, e env, p ports, b binaries) error {
	tmpl, err := files.ReadFile("collector.yaml")
	if err != nil {
		return err
	}
	t, err := template.New("collector.yaml").Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, struct {
		Ports ports
		Dir   string
	}{p, e.dir}); err != nil {
		return err
	}
	cfg := e.path("collector.yaml")
	if err := os.WriteFile(cfg, buf.Bytes(), 0o644); err != nil {
		return err
	}
	env := []string{
		"KUBECONFIG=" + e.path("kubeconfig"),
		"AWS_ACCESS_KEY_ID=" + minioUser, "AWS_SECRET_ACCESS_KEY=" + minioPassword,
		"AWS_EC2_METADATA_DISABLED=true",
	}
	validate := exec.CommandContext(ctx, b.collector, "validate", "--config="+cfg)
	validate.Dir, validate.Env = e.root, append(os.Environ(), env...)
	if out, err := validate.CombinedOutput(); err != nil {
		return fmt.Errorf("%s validate --config=%s: %w\n%s", e.rel(b.collector), e.rel(cfg), err, out)
	}
	if _, err := start(e, "collector", env, b.collector, "--config="+cfg); err != nil {
		return err
	}
	return waitReady(ctx, e, "collector", 60*time.Second, func() error {
		return httpOK("http://127.0.0.1:" + strconv.Itoa(p.CollectorHealth) + "/")
	})
}

// admissionReview builds the input OPA gets from a Kubernetes admission webhook.
func admissionReview(uid, kind, namespace, name, image string, labels map[string]string) map[string]any {
	group, version := "", "v1"
	if kind == "Deployment" {
		group = "apps"
	}
	obj := map[string]any{
		"apiVersion": strings.TrimPrefix(group+"/"+version, "/"),
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": labels, "uid": "uid-" + name},
		"spec":       map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}},
	}
	return map[string]any{
		"apiVersion": "admission.k8s.io/v1",
		"kind":       "AdmissionReview",
		"request": map[string]any{
			"uid":       uid,
			"kind":      map[string]any{"group": group, "version": version, "kind": kind},
			"resource":  map[string]any{"group": group, "version": version, "resource": strings.ToLower(kind) + "s"},
			"namespace": namespace,
			"name":      name,
			"operation": "CREATE",
			"userInfo":  map[string]any{"username": "dev@example.com"},
			"object":    obj,
		},
	}
}

// askOPA evaluates the demo policy for a few admission requests, allowed and denied, and returns OPA's
// decision ids.
func askOPA(ctx context.Context, p ports) ([]string, error) {
	team := map[string]string{"team": "shop"}
	inputs := []map[string]any{
		admissionReview("req-1", "Pod", "shop", "cart-7d9f8", "registry.example.com/cart:1.4.2", team),
		admissionReview("req-2", "Pod", "shop", "web-1", "nginx:latest", team),
		admissionReview("req-3", "Pod", "payments", "checkout-5c6b7", "registry.example.com/checkout:2.1.0", nil),
		admissionReview("req-4", "Pod", "payments", "api-0", "registry.example.com/api:latest", nil),
		admissionReview("req-5", "Pod", "shop", "worker-2", "registry.example.com/worker:3.0.0", team),
		admissionReview("req-6", "Deployment", "shop", "web", "nginx:latest", team),
	}
	url := "http://127.0.0.1:" + strconv.Itoa(p.OPA) + "/v1/data/demo/admission/decision"
	var ids []string
	for _, in := range inputs {
		body, _ := json.Marshal(map[string]any{"input": in})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			return ids, err
		}
		var out struct {
			DecisionID string `json:"decision_id"`
			Result     struct {
				Allowed bool     `json:"allowed"`
				Deny    []string `json:"deny"`
			} `json:"result"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			return ids, fmt.Errorf("OPA answer: %w", err)
		}
		if resp.StatusCode != http.StatusOK || out.DecisionID == "" {
			return ids, fmt.Errorf("OPA answered %s without a decision id", resp.Status)
		}
		ids = append(ids, out.DecisionID)
	}
	return ids, nil
}

// gatekeeperLines are Gatekeeper export messages (audit and admission violations), one JSON object per line.
func gatekeeperLines() []string {
	now := time.Now().UTC().Format(time.RFC3339)
	return []string{
		`{"id":"` + now + `","eventType":"violation_audited","kind":"K8sRequiredLabels","name":"all-must-have-owner",` +
			`"message":"you must provide labels: {\"owner\"}","enforcementAction":"deny",` +
			`"resourceAPIVersion":"v1","resourceKind":"Namespace","resourceName":"shop"}`,
		`{"id":"` + now + `","eventType":"violation_audited","kind":"K8sRequiredLabels","name":"all-must-have-owner",` +
			`"message":"you must provide labels: {\"owner\"}","enforcementAction":"deny",` +
			`"resourceAPIVersion":"v1","resourceKind":"Namespace","resourceName":"payments"}`,
		`{"id":"` + now + `","eventType":"violation_admission","kind":"K8sAllowedRepos","name":"repos-must-be-internal",` +
			`"message":"container <app> has an invalid image repo <docker.io/nginx:latest>","enforcementAction":"warn",` +
			`"resourceAPIVersion":"v1","resourceKind":"Pod","resourceNamespace":"shop","resourceName":"web-1",` +
			`"operation":"CREATE","requestUsername":"dev@example.com"}`,
	}
}

// sendGatekeeper writes the Gatekeeper lines to the collector's NDJSON socket.
func sendGatekeeper(e env) error {
	conn, err := net.DialTimeout("unix", e.path("decisions.sock"), 5*time.Second)
	if err != nil {
		return err
	}
	for _, l := range gatekeeperLines() {
		if _, err := conn.Write([]byte(l + "\n")); err != nil {
			conn.Close()
			return err
		}
	}
	return conn.Close()
}
