// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package handover

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/apiserver"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/testbed/internal/pssreports"
)

// cluster is the replicas' cluster name, part of every key.
const cluster = "handover"

// input is the reports of a run: report i in namespace ns-<i mod namespaces>, its rule i mod 23 failing, so
// that one report in 23 passes every rule and the summaries and gauges count both outcomes.
type input struct {
	reports, namespaces int
}

func (in input) namespace(i int) string { return fmt.Sprintf("ns-%02d", i%in.namespaces) }

func (in input) report(i int) *unstructured.Unstructured {
	return pssreports.Report(in.namespace(i), i, i%(pssreports.ResultsPerReport+4))
}

func (in input) results() int { return in.reports * pssreports.ResultsPerReport }

func (in input) create(t *testing.T, c *apiserver.Cluster) {
	for n := range in.namespaces {
		c.CreateNamespace(t, in.namespace(n))
	}
	_, dc := c.Clients(t)
	require.NoError(t, pssreports.Parallel(in.reports, 32, func(i int) error {
		_, err := dc.Resource(pssreports.GVR).Namespace(in.namespace(i)).Create(context.Background(), in.report(i), metav1.CreateOptions{})
		return err
	}))
}

// expected is what the reports must come out as: the key of every result, the counts of every summary group
// and the value of every policy.results series.
type expected struct {
	keys      map[string]bool
	summaries map[string]policyresult.Counts
	gauges    map[string]int64
}

// expect computes what the collector emits from the reports themselves: every result as the receiver reads it,
// grouped as policy_aggregate groups by default and as policy_metrics labels its gauges (gaugeLabels, from the
// config), with a point for every outcome.
func expect(t *testing.T, in input, gaugeLabels []string) expected {
	e := expected{keys: map[string]bool{}, summaries: map[string]policyresult.Counts{}, gauges: map[string]int64{}}
	gaugeGroups := map[string]map[policyresult.Outcome]int64{}
	for i := range in.reports {
		obj := in.report(i).Object
		str := func(m map[string]any, k string) string {
			s, ok := m[k].(string)
			require.True(t, ok, "%s is a string", k)
			return s
		}
		scope := obj["scope"].(map[string]any)
		subject := policyresult.Resource{APIVersion: str(scope, "apiVersion"), Kind: str(scope, "kind"),
			Namespace: str(scope, "namespace"), Name: str(scope, "name"), UID: str(scope, "uid")}
		for _, raw := range obj["results"].([]any) {
			m := raw.(map[string]any)
			outcome, err := policyresult.ParseOutcome(str(m, "result"))
			require.NoError(t, err)
			r := policyresult.Result{Cluster: cluster, Source: str(m, "source"), Policy: str(m, "policy"),
				Rule: str(m, "rule"), Severity: policyresult.ParseSeverity(str(m, "severity")), Resource: subject}
			e.keys[r.Key()] = true
			attrs := map[string]string{
				policyresult.AttrClusterName: r.Cluster, policyresult.AttrSource: r.Source,
				policyresult.AttrPolicy: r.Policy, policyresult.AttrRule: r.Rule,
				policyresult.AttrSeverity: string(r.Severity), policyresult.AttrResourceNamespace: subject.Namespace,
			}
			var group []policyresult.Attribute
			for _, name := range policyresult.DefaultSummaryGroup() {
				group = append(group, policyresult.Attribute{Name: name, Value: attrs[name]})
			}
			key := policyresult.SummaryKey(group)
			c := e.summaries[key]
			c.Add(outcome, 1)
			e.summaries[key] = c

			var labels []string
			for _, name := range gaugeLabels {
				v, known := attrs[name]
				require.True(t, known, "policy_metrics label %s is one this test knows the value of", name)
				labels = append(labels, name+"="+v)
			}
			id := strings.Join(labels, ",")
			if gaugeGroups[id] == nil {
				gaugeGroups[id] = map[policyresult.Outcome]int64{}
			}
			gaugeGroups[id][outcome]++
		}
	}
	for id, byOutcome := range gaugeGroups {
		for _, o := range policyresult.Outcomes {
			series := append(strings.Split(id, ","), policyresult.AttrResult+"="+string(o))
			slices.Sort(series)
			e.gauges[strings.Join(series, ",")] = byOutcome[o]
		}
	}
	return e
}

// diff describes how got differs from want, "" when equal.
func diff[V comparable](what string, got, want map[string]V) string {
	if maps.Equal(got, want) {
		return ""
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			out = append(out, fmt.Sprintf("%s: got %v, want %v", k, g, want[k]))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: got %v, none expected", k, got[k]))
		}
	}
	n := len(out)
	if n > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", n-5))
	}
	return fmt.Sprintf("%s: %d of %d differ: %s", what, n, len(want), strings.Join(out, "; "))
}
