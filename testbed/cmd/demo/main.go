// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Command demo runs the whole otelcol-policy pipeline on this machine, for `make demo` and `make demo-stop`:
// etcd and kube-apiserver with the report CRDs, OPA uploading its decision log to the collector, MinIO, a
// Kafka-protocol broker, the results server, Prometheus (remote write from the collector) and the collector, all in the background, with their logs and
// state under ./data/demo/. It then creates sample reports of every kind, asks OPA for decisions, writes
// Gatekeeper violations to the collector's socket, and shows where each record went.
//
//	demo up       start everything (a fresh ./data/demo each time), send samples, print the report
//	demo down     stop what `up` started (./data/demo/pids), keep the data
//	demo status   the processes and the report again (no new samples)
//	demo consume  the records of the Kafka topic, from the start
//	demo kafka    the Kafka-protocol broker (kfake) that `up` runs in the background
//
// It runs from the repository root (the Makefile does): it uses bin/otelcol-policy, bin/results-server, the
// servers `make test-servers` caches, and the CRDs in receiver/k8sreportsreceiver/testdata/crds.
package main

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The data files: the collector configuration template, OPA's policy and the sample reports.
//
//go:embed collector.yaml policy.rego samples/*.yaml
var files embed.FS

const usage = `usage: demo up | down | status | consume [--event E] [--n N] | kafka --port N --dir DIR

  up      start etcd, kube-apiserver, OPA, MinIO, Kafka (kfake), the results server, Prometheus and the
          collector in the background under ./data/demo, send sample reports and decisions, and print where they went
  down    stop what up started (the processes in ./data/demo/pids); the data stays
  status  show the processes and the report again
  consume print the records of the Kafka topic from the start (key, headers, value), optionally only those
          of one event name (policy.result, policy.decision, policy.summary), at most N
  kafka   run the Kafka-protocol broker in the foreground (up runs it in the background)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up()
	case "down":
		err = down()
	case "status":
		err = status()
	case "kafka":
		err = kafka(os.Args[2:])
	case "consume":
		err = consume(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// env is where things are: the repository root and ./data/demo under it.
type env struct {
	root string // repository root (absolute)
	dir  string // <root>/data/demo
}

func (e env) path(p ...string) string { return filepath.Join(append([]string{e.dir}, p...)...) }

// rel shortens an absolute path under the repository root for printing.
func (e env) rel(p string) string {
	if r, err := filepath.Rel(e.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return "./" + r
	}
	return p
}

// findEnv finds the repository root from the working directory: the directory holding go.mod and
// builder-config.yaml.
func findEnv() (env, error) {
	wd, err := os.Getwd()
	if err != nil {
		return env{}, err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if exists(filepath.Join(d, "go.mod")) && exists(filepath.Join(d, "builder-config.yaml")) {
			return env{root: d, dir: filepath.Join(d, "data", "demo")}, nil
		}
		if filepath.Dir(d) == d {
			return env{}, errors.New("run the demo from the otelcol-policy repository (make demo)")
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
