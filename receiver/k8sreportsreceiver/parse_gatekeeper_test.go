// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

func gvrConstraint(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: resource}
}

func TestParseGatekeeperConstraint(t *testing.T) {
	ts := mustTime(t, "2025-05-06T07:08:09Z")
	const missingTeam = `you must provide labels: {"team"}`
	labels := func(o policyresult.Outcome, res policyresult.Resource) policyresult.Result {
		return policyresult.Result{
			Source: "gatekeeper", Policy: "K8sRequiredLabels", Rule: "ns-must-have-team", Outcome: o,
			Message: missingTeam, Resource: res,
			Report:    policyresult.Report{Kind: "K8sRequiredLabels", Name: "ns-must-have-team"},
			Timestamp: ts,
		}
	}
	limits := func(o policyresult.Outcome, res policyresult.Resource, msg string) policyresult.Result {
		return policyresult.Result{
			Source: "gatekeeper", Policy: "K8sContainerLimits", Rule: "containers-must-have-limits", Outcome: o,
			Message: msg, Resource: res,
			Report:    policyresult.Report{Kind: "K8sContainerLimits", Name: "containers-must-have-limits"},
			Timestamp: ts,
		}
	}
	cart := policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-5d9c8b7a6-qwert"}

	tests := []struct {
		file     string
		resource string
		want     []policyresult.Result
		// rules of results that share policy, rule and subject get a suffix; only its presence is checked
		disambiguated []int
	}{
		{
			file:     "gatekeeper/requiredlabels.yaml",
			resource: "k8srequiredlabels",
			want: []policyresult.Result{
				// Core group: the apiVersion is the bare version; cluster-scoped: no namespace.
				labels(policyresult.OutcomeFail, policyresult.Resource{APIVersion: "v1", Kind: "Namespace", Name: "payments"}),
				labels(policyresult.OutcomeFail, policyresult.Resource{APIVersion: "apps/v1", Kind: "Deployment",
					Namespace: "payments", Name: "ledger"}),
				labels(policyresult.OutcomeWarn, policyresult.Resource{APIVersion: "apps/v1", Kind: "Deployment",
					Namespace: "sandbox", Name: "scratch"}),
			},
		},
		{
			file:     "gatekeeper/containerlimits-scoped.yaml",
			resource: "k8scontainerlimits",
			want: []policyresult.Result{
				limits(policyresult.OutcomeWarn, cart, "container <cart> has no resource limits"),
				limits(policyresult.OutcomeWarn, cart, "container <istio-proxy> has no resource limits"),
				// Scoped to warn and deny: the stronger wins.
				limits(policyresult.OutcomeFail, policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: "shop",
					Name: "checkout-7f7f7f7f7f-asdfg"}, "container <checkout> has no resource limits"),
				// No group or version: apiVersion unknown. Scoped without actions, and an unknown action: fail.
				limits(policyresult.OutcomeFail, policyresult.Resource{Kind: "Pod", Namespace: "legacy", Name: "old-app"},
					"container <old-app> has no resource limits"),
				limits(policyresult.OutcomeFail, policyresult.Resource{Kind: "Pod", Namespace: "legacy", Name: "other-app"},
					"container <other-app> has no resource limits"),
			},
			disambiguated: []int{0, 1},
		},
		{file: "gatekeeper/no-violations.yaml", resource: "k8sallowedrepos", want: []policyresult.Result{}},
		{file: "gatekeeper/not-audited.yaml", resource: "k8sallowedrepos", want: []policyresult.Result{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := parse.GatekeeperConstraint(parserFixture(t, gvrConstraint(tt.resource), tt.file), testBudget)
			require.NoError(t, err)
			require.Len(t, got, len(tt.want))
			assertDistinctKeys(t, got...)
			for _, i := range tt.disambiguated {
				assert.Regexp(t, `^`+tt.want[i].Rule+`#[0-9a-f]{8}$`, got[i].Rule)
				got[i].Rule = tt.want[i].Rule
			}
			assert.Equal(t, tt.want, parsedResults(got))
		})
	}
}

func TestParseGatekeeperConstraintBodyIsTheViolation(t *testing.T) {
	got, err := parse.GatekeeperConstraint(parserFixture(t, gvrConstraint("k8scontainerlimits"), "gatekeeper/containerlimits-scoped.yaml"), testBudget)
	require.NoError(t, err)
	require.Len(t, got, 5)
	assert.JSONEq(t, `{
		"enforcementAction": "scoped", "enforcementActions": ["warn", "deny"],
		"group": "", "version": "v1", "kind": "Pod", "namespace": "shop", "name": "checkout-7f7f7f7f7f-asdfg",
		"message": "container <checkout> has no resource limits"
	}`, string(got[2].Body.Bytes()))
}

func TestParseGatekeeperMalformed(t *testing.T) {
	_, err := parse.GatekeeperConstraint(parserFixture(t, gvrConstraint("k8srequiredlabels"), "gatekeeper/malformed.yaml"), testBudget)
	assert.ErrorContains(t, err, "status.violations")

	obj, err := parse.DecodeObject(gvrConstraint("k8srequiredlabels"), []byte(`{"kind":"K8sRequiredLabels","metadata":{"name":"x"},
		"status":{"violations":[{"kind":"Namespace","name":"a"},"b"]}}`))
	require.NoError(t, err)
	_, err = parse.GatekeeperConstraint(obj, testBudget)
	assert.ErrorContains(t, err, "status.violations[1]")
}
