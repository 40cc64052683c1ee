// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// kubewardenRunLabel is the label Kubewarden's audit scanner sets to the UID of the run that last wrote a
// report; it deletes the reports of older runs after each run.
const kubewardenRunLabel = "kubewarden.io/audit-scanner-run-uid"

// kubewardenReport reads one of the Kubewarden-shaped reports of testdata/parsers/kubewarden.
func kubewardenReport(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	objs := apiserver.Objects(t, filepath.Join("testdata", "parsers", "kubewarden", file))
	require.Len(t, objs, 1)
	return objs[0]
}

// nextAuditRun rewrites obj as Kubewarden's next audit run writes it when nothing about the resource's
// compliance changed: the run label, every result's timestamp and the policies' resource versions are new (an
// edited policy, its verdict the same), the scope has a new resourceVersion (the resource was edited), and
// the results come in another order (they are collected from concurrent evaluations).
func nextAuditRun(t *testing.T, obj *unstructured.Unstructured, run string) {
	t.Helper()
	labels := obj.GetLabels()
	labels[kubewardenRunLabel] = run
	obj.SetLabels(labels)
	rv, found, err := unstructured.NestedString(obj.Object, "scope", "resourceVersion")
	require.NoError(t, err)
	require.True(t, found)
	require.NoError(t, unstructured.SetNestedField(obj.Object, rv+"7", "scope", "resourceVersion"))
	results, found, err := unstructured.NestedSlice(obj.Object, "results")
	require.NoError(t, err)
	require.True(t, found)
	for _, r := range results {
		res := r.(map[string]any)
		res["timestamp"] = map[string]any{"seconds": int64(1762303600), "nanos": int64(0)} // the fixtures' time + 1h
		props := res["properties"].(map[string]any)
		prv, err := strconv.Atoi(props["policy-resource-version"].(string))
		require.NoError(t, err)
		props["policy-resource-version"] = strconv.Itoa(prv + 1)
	}
	slices.Reverse(results)
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, results, "results"))
}

// setKubewardenOutcome sets the result of obj's result for policy.
func setKubewardenOutcome(t *testing.T, obj *unstructured.Unstructured, policy, outcome string) {
	t.Helper()
	results, _, err := unstructured.NestedSlice(obj.Object, "results")
	require.NoError(t, err)
	for _, r := range results {
		if res := r.(map[string]any); res["policy"] == policy {
			res["result"] = outcome
			delete(res, "message")
			require.NoError(t, unstructured.SetNestedSlice(obj.Object, results, "results"))
			return
		}
	}
	t.Fatalf("no result for policy %s", policy)
}

func parseKubewarden(t *testing.T, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) []parse.Result {
	t.Helper()
	raw, err := json.Marshal(obj.Object)
	require.NoError(t, err)
	decoded, err := parse.DecodeObject(gvr, raw)
	require.NoError(t, err)
	results, err := parse.PolicyReport(decoded, testBudget)
	require.NoError(t, err)
	for i := range results {
		results[i].Cluster = "c1" // as the watcher sets it
	}
	return results
}

// identities maps each result's key to its ID.
func identities(results []parse.Result) map[string]string {
	out := make(map[string]string, len(results))
	for i := range results {
		out[results[i].Key()] = results[i].ID()
	}
	return out
}

var kubewardenCases = []struct {
	file    string
	gvr     schema.GroupVersionResource
	subject policyresult.Resource
}{{
	file: "policyreport.yaml", gvr: policyReportGVR,
	subject: policyresult.Resource{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "cart",
		UID: "5e0c7a21-8b3d-4f6e-9a1c-2d4b6f8e0a13"},
}, {
	file: "clusterpolicyreport.yaml", gvr: clusterPolicyReportGVR,
	subject: policyresult.Resource{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "a47f19d2-6c0b-4e35-b8a9-3f5d7e9c1b24"},
}}

// TestKubewardenAuditRunsEmitNothingNew: Kubewarden rewrites every report on every audit run. What a run
// changes without changing a verdict (labels, timestamps, policy and scope resource versions, result order)
// must give the same keys and IDs, so that the run emits no record.
func TestKubewardenAuditRunsEmitNothingNew(t *testing.T) {
	for _, c := range kubewardenCases {
		t.Run(c.file, func(t *testing.T) {
			first := kubewardenReport(t, c.file)
			firstResults := parseKubewarden(t, c.gvr, first)
			require.NotEmpty(t, firstResults)
			for i := range firstResults {
				assert.Equal(t, c.subject, firstResults[i].Resource, "the scope is the subject")
				assert.Empty(t, firstResults[i].Rule, "Kubewarden sets no rule")
			}

			second := first.DeepCopy()
			nextAuditRun(t, second, "0f3e9b57-2222-4c2a-8d6e-7b9a0c1d2e02")
			secondResults := parseKubewarden(t, c.gvr, second)
			assert.Equal(t, identities(firstResults), identities(secondResults))

			prev := emittedOf(firstResults)
			recs, _ := diff(prev, secondResults, false, false, true, "c1")
			assert.Empty(t, states(recs), "a new audit run with the same verdicts")

			// The scope's resourceVersion alone: not part of any key (it changes whenever the resource does).
			edited := first.DeepCopy()
			require.NoError(t, unstructured.SetNestedField(edited.Object, "999999", "scope", "resourceVersion"))
			assert.Equal(t, identities(firstResults), identities(parseKubewarden(t, c.gvr, edited)))

			// The report deleted (the resource is gone, or the scanner dropped the report of an older run):
			// every result is resolved, with its last outcome, under its key.
			recs, state := diff(prev, nil, true, false, true, "c1")
			assert.Nil(t, state)
			require.Len(t, recs, len(firstResults))
			for i := range recs {
				assert.Equal(t, policyresult.StateResolved, recs[i].State)
				assert.Equal(t, firstResults[i].Outcome, recs[i].Outcome)
				assert.Equal(t, c.subject, recs[i].Resource)
				assert.Equal(t, firstResults[i].Key(), recs[i].Key(), "resolves %s", firstResults[i].Policy)
			}
		})
	}
}

// TestKubewardenVerdictChange: a result whose verdict changes between runs is the one changed record.
func TestKubewardenVerdictChange(t *testing.T) {
	first := kubewardenReport(t, "policyreport.yaml")
	firstResults := parseKubewarden(t, policyReportGVR, first)
	second := first.DeepCopy()
	nextAuditRun(t, second, "0f3e9b57-3333-4c2a-8d6e-7b9a0c1d2e03")
	setKubewardenOutcome(t, second, "clusterwide-disallow-privileged", "pass")
	recs, _ := diff(emittedOf(firstResults), parseKubewarden(t, policyReportGVR, second), false, false, true, "c1")
	assert.Equal(t, []string{"changed clusterwide-disallow-privileged cart pass"}, states(recs))
}
