// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package pssreports makes the PolicyReports of the testbed's report-watcher tests and benchmarks: one per Pod,
// with the 19 results of Kyverno's Pod Security Standards "restricted" policies (about 6 KB each), the shape a
// real cluster's reports have, so that the tests measure what users run.
package pssreports // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/pssreports"

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResultsPerReport is the number of results in every report.
const ResultsPerReport = 19

// GVR is the resource of the reports.
var GVR = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}

// CRD is the file under the repository root that defines the reports' resource.
const CRD = "receiver/k8sreportsreceiver/testdata/crds/wgpolicyk8s.io.yaml"

// Rules are the policies and rules Kyverno evaluates for each Pod, in the order of a report's results.
var Rules = [ResultsPerReport][2]string{
	{"disallow-capabilities", "adding-capabilities"},
	{"disallow-capabilities-strict", "require-drop-all"},
	{"disallow-capabilities-strict", "adding-capabilities-strict"},
	{"disallow-host-namespaces", "host-namespaces"},
	{"disallow-host-path", "host-path"},
	{"disallow-host-ports", "host-ports-none"},
	{"disallow-host-process", "host-process-containers"},
	{"disallow-privilege-escalation", "privilege-escalation"},
	{"disallow-privileged-containers", "privileged-containers"},
	{"disallow-proc-mount", "check-proc-mount"},
	{"disallow-selinux", "selinux-type"},
	{"disallow-selinux", "selinux-user-role"},
	{"require-run-as-non-root-user", "run-as-non-root-user"},
	{"require-run-as-nonroot", "run-as-non-root"},
	{"restrict-apparmor-profiles", "app-armor"},
	{"restrict-seccomp", "check-seccomp"},
	{"restrict-seccomp-strict", "check-seccomp-strict"},
	{"restrict-sysctls", "check-sysctls"},
	{"restrict-volume-types", "restricted-volumes"},
}

// Source, Category and Severity are those of every result.
const (
	Source   = "kyverno"
	Category = "Pod Security Standards (Restricted)"
	Severity = "medium"
)

// Outcome is the result of rule j in a report whose rule failRule fails (none when failRule is out of range).
func Outcome(j, failRule int) string {
	if j == failRule {
		return "fail"
	}
	return "pass"
}

// Report is report i in namespace ns, its rule failRule failing.
func Report(ns string, i int, failRule int) *unstructured.Unstructured {
	pod := fmt.Sprintf("app-%d-7d9f8c6b5-x%04d", i%40, i)
	uid := fmt.Sprintf("0b7f7c1e-%04d-4c1e-9f35-%012d", i%10000, i)
	results := make([]any, ResultsPerReport)
	fails := 0
	for j, pr := range Rules {
		outcome, msg := Outcome(j, failRule), fmt.Sprintf("validation rule '%s' passed.", pr[1])
		if outcome == "fail" {
			fails++
			msg = fmt.Sprintf("validation error: the pod spec violates %s. rule %s failed at path /spec/containers/0/securityContext/", pr[0], pr[1])
		}
		results[j] = map[string]any{
			"source": Source, "policy": pr[0], "rule": pr[1], "result": outcome, "message": msg,
			"category": Category, "severity": Severity, "scored": true,
			"timestamp":  map[string]any{"seconds": int64(1763800000), "nanos": int64(0)},
			"properties": map[string]any{"process": "background scan"},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": uid, "namespace": ns, "labels": map[string]any{
			"app.kubernetes.io/managed-by": "kyverno"}},
		"scope":   map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": pod, "uid": uid},
		"summary": map[string]any{"pass": int64(ResultsPerReport - fails), "fail": int64(fails)},
		"results": results,
	}}
}

// Parallel runs f for 0..n-1 on workers goroutines and returns one of the errors, if any: creating reports
// one at a time takes minutes at the testbed's scale.
func Parallel(n, workers int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
