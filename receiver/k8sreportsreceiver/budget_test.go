// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// testBudget is the default budget, for tests of the parsers.
var testBudget = createDefaultConfig().(*Config).budget()

// fanoutReport is a PolicyReport whose one result, with a message of msgBytes, lists subjects pods.
func fanoutReport(name, rv string, subjects, msgBytes int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"apiVersion":"wgpolicyk8s.io/v1alpha2","kind":"PolicyReport","metadata":{"name":%q,"namespace":"shop","resourceVersion":%q},`, name, rv)
	fmt.Fprintf(&b, `"results":[{"policy":"require-labels","rule":"check-team","result":"fail","message":%q,"resources":[`, strings.Repeat("m", msgBytes))
	for i := range subjects {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","namespace":"shop","name":"pod-%05d"}`, i)
	}
	b.WriteString(`],"properties":{"team":"none"}}]}`)
	return []byte(b.String())
}

func parseRaw(t *testing.T, raw []byte, budget parse.Budget) ([]parse.Result, error) {
	t.Helper()
	obj, err := parse.DecodeObject(policyReportGVR, raw)
	require.NoError(t, err)
	return parse.PolicyReport(obj, budget)
}

func TestRecordBodyCarriesOnlyItsOwnSubject(t *testing.T) {
	raw := []byte(`{"kind":"PolicyReport","metadata":{"name":"r","namespace":"shop"},"results":[
	  {"policy":"p","rule":"r","result":"fail","resources" : [ {"kind":"Pod","name":"a"},
	    {"kind":"Pod","name":"b"}, {"kind":"Pod","name":"c"} ] ,"message":"m","properties":{"x":"1"}},
	  {"policy":"q","result":"pass","resources":[{"kind":"Pod","name":"only"}]},
	  {"policy":"s","resources":[{"kind":"Pod","name":"ignored"}],"Resources":[{"kind":"Pod","name":"x"},{"kind":"Pod","name":"y"}]}]}`)
	got, err := parseRaw(t, raw, testBudget)
	require.NoError(t, err)
	require.Len(t, got, 6)
	for i, name := range []string{"a", "b", "c"} {
		assert.Equal(t, name, got[i].Resource.Name)
		// The result as written, member order included, with only this record's subject.
		assert.Equal(t, `{"policy":"p","rule":"r","result":"fail","resources" : [{"kind":"Pod","name":"`+name+`"}] ,"message":"m","properties":{"x":"1"}}`,
			string(got[i].Body.Bytes()))
		assert.Equal(t, len(got[i].Body.Bytes()), got[i].Body.Size())
	}
	// One subject: the result as it is.
	assert.Equal(t, `{"policy":"q","result":"pass","resources":[{"kind":"Pod","name":"only"}]}`, string(got[3].Body.Bytes()))
	// The subjects and the bodies come from the same member, the one encoding/json decodes (the last that matches).
	for i, name := range []string{"x", "y"} {
		r := got[4+i]
		assert.Equal(t, name, r.Resource.Name)
		var body struct {
			Resources []parse.ObjectRef `json:"Resources"`
			Ignored   []parse.ObjectRef `json:"resources"`
		}
		require.NoError(t, json.Unmarshal(r.Body.Bytes(), &body))
		assert.Equal(t, []parse.ObjectRef{{Kind: "Pod", Name: name}}, body.Resources)
	}

	// N subjects cost N bodies of one subject: linear, not N×N.
	for _, n := range []int{1000, 4000} {
		results, err := parseRaw(t, fanoutReport("big", "1", n, 100), testBudget)
		require.NoError(t, err)
		require.Len(t, results, n)
		total := 0
		for _, r := range results {
			total += r.Body.Size()
		}
		assert.Less(t, total, n*300, "%d subjects", n)
	}
}

func TestTooLargeReports(t *testing.T) {
	budget := parse.Budget{Records: 100, Bytes: 64 << 10}
	// Within the budget.
	got, err := parseRaw(t, fanoutReport("r", "1", 100, 10), budget)
	require.NoError(t, err)
	assert.Len(t, got, 100)

	// More records than the budget: refused whole, with the report's real size.
	_, err = parseRaw(t, fanoutReport("r", "1", 101, 10), budget)
	var tooLarge *parse.TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, 101, tooLarge.Size.Records)
	assert.Contains(t, err.Error(), "101 records")
	assert.Contains(t, err.Error(), "max_report_records 100")

	// Few records with big bodies: the bodies count, not the object (a 10 KB message repeated per subject).
	raw := fanoutReport("r", "1", 10, 10_000)
	require.Less(t, len(raw), 16<<10)
	_, err = parseRaw(t, raw, budget)
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, 10, tooLarge.Size.Records)
	assert.Greater(t, tooLarge.Size.Bytes, int64(100_000))

	// Kinds without fan-out are bounded the same way: one record per entry.
	vulns := make([]string, 101)
	for i := range vulns {
		vulns[i] = fmt.Sprintf(`{"vulnerabilityID":"CVE-%d","resource":"openssl"}`, i)
	}
	obj, err := parse.DecodeObject(vulnReportGVR, []byte(`{"kind":"VulnerabilityReport","metadata":{"name":"v"},"report":{"vulnerabilities":[`+strings.Join(vulns, ",")+`]}}`))
	require.NoError(t, err)
	_, err = parse.VulnerabilityReport(obj, budget)
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, 101, tooLarge.Size.Records)
	results, err := parse.VulnerabilityReport(obj, parse.Budget{Records: 101, Bytes: 64 << 10})
	require.NoError(t, err)
	assert.Len(t, results, 101)
}

func TestRefusedReportKeepsWhatWasEmitted(t *testing.T) {
	prev := emittedOf([]parse.Result{res("p1", "a", policyresult.OutcomeFail, "bad")})
	prev.ResourceVersion = "1"
	next := prev.refusing("2", parse.Size{Records: 60_000, Bytes: 1 << 20})
	assert.Equal(t, prev.results, next.results, "the results emitted before stay emitted")
	assert.Equal(t, "1", next.ResourceVersion, "the last version read")
	assert.Nil(t, prev.refused, "the committed state is not changed in place")

	// The refusal survives a restart with the state.
	b, err := json.Marshal(next)
	require.NoError(t, err)
	back := &emittedReport{}
	require.NoError(t, json.Unmarshal(b, back))
	assert.Equal(t, next, back)

	// A refused report that was never emitted has no results to keep.
	first := (*emittedReport)(nil).refusing("7", parse.Size{Records: 1})
	assert.Empty(t, first.results)
	assert.Equal(t, "7", first.refused.resourceVersion)
}
