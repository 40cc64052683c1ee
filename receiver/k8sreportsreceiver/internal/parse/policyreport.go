// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// policyReport covers wgpolicyk8s.io/v1alpha2 (Cluster)PolicyReport, openreports.io/v1alpha1 (Cluster)Report,
// which adds a report-level source, and reports.kyverno.io/v1 (Cluster)EphemeralReport, which nests the same
// fields under spec and names its subject in spec.owner.
type policyReport struct {
	Source  string            `json:"source"`
	Scope   *ObjectRef        `json:"scope"`
	Results []json.RawMessage `json:"results"`
	Spec    *struct {
		Owner   *ObjectRef        `json:"owner"`
		Results []json.RawMessage `json:"results"`
	} `json:"spec"`
}

type policyReportResult struct {
	Source    string            `json:"source"`
	Policy    string            `json:"policy"`
	Rule      string            `json:"rule"`
	Category  string            `json:"category"`
	Severity  string            `json:"severity"`
	Result    string            `json:"result"`
	Scored    *bool             `json:"scored"`
	Message   string            `json:"message"`
	Resources []json.RawMessage `json:"resources"`
	Timestamp *k8sTimestamp     `json:"timestamp"`
}

// PolicyReport emits one result per (result × subject resource). A result without resources is about the
// report's scope (or, for an EphemeralReport, its owner); without either it is a cluster-wide result identified
// by the report. The body of each record is the source's result with only that record's subject in its
// resources.
func PolicyReport(obj *Object, budget Budget) ([]Result, error) {
	var rep policyReport
	if err := json.Unmarshal(obj.Raw, &rep); err != nil {
		return nil, err
	}
	items, scope := rep.Results, rep.Scope
	if rep.Spec != nil {
		items = rep.Spec.Results
		if rep.Spec.Owner != nil {
			scope = rep.Spec.Owner
		}
	}
	f := fanout{budget: budget}
	out := make([]Result, 0, f.capacity(len(items)))
	for i, raw := range items {
		var r policyReportResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("results[%d]: %w", i, err)
		}
		bodies := []Body{WholeBody(raw)}
		if len(r.Resources) > 1 {
			var err error
			if bodies, err = subjectBodies(raw, r.Resources); err != nil {
				return nil, fmt.Errorf("results[%d]: %w", i, err)
			}
		}
		var bytes int64
		for _, b := range bodies {
			bytes += int64(b.Size())
		}
		if !f.add(len(bodies), bytes) {
			out = nil // too large: build nothing more, count the rest
			continue
		}
		out = slices.Grow(out, len(bodies))
		base := Result{Result: policyresult.Result{
			Source:    firstNonEmpty(r.Source, rep.Source),
			Policy:    r.Policy,
			Rule:      r.Rule,
			Category:  r.Category,
			Severity:  policyresult.ParseSeverity(r.Severity),
			Scored:    r.Scored,
			Message:   r.Message,
			Report:    obj.Report(),
			Timestamp: r.Timestamp.time(),
		}}
		// A result without a result value (some adapters omit it) keeps no outcome rather than an invented one.
		if o, err := policyresult.ParseOutcome(r.Result); err == nil {
			base.Outcome = o
		}
		switch {
		case len(r.Resources) > 0:
			for j, entry := range r.Resources {
				var res ObjectRef
				if err := json.Unmarshal(entry, &res); err != nil {
					return nil, fmt.Errorf("results[%d].resources[%d]: %w", i, j, err)
				}
				pr := base
				pr.Resource, pr.Body = res.Resource(), bodies[min(j, len(bodies)-1)]
				out = append(out, pr)
			}
		case scope != nil:
			base.Resource, base.Body = scope.Resource(), bodies[0]
			out = append(out, base)
		default:
			base.Body = bodies[0]
			out = append(out, base)
		}
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	return disambiguateBy(out, policyReportDiscriminator), nil
}

// policyReportDiscriminator tells apart results with the same policy, rule and resource by what they say,
// leaving out the timestamp, which changes with every scan and would give the result a new key each time.
func policyReportDiscriminator(body []byte) []byte {
	var d struct {
		Category   string            `json:"category"`
		Message    string            `json:"message"`
		Properties map[string]string `json:"properties"`
	}
	if json.Unmarshal(body, &d) != nil {
		return body
	}
	b, _ := json.Marshal(d) // map keys are sorted, so equal content gives equal bytes
	return b
}

// Disambiguate gives results that the source does not tell apart by policy, rule and resource (for example
// vulnerabilities listed with an empty policy and rule) distinct keys: each such result's rule gets a suffix
// made from a hash of its own body, which is stable whatever order the source lists them in.
func Disambiguate(results []Result) []Result {
	return disambiguateBy(results, func(body []byte) []byte { return body })
}

// disambiguateBy is Disambiguate with the part of the body that identifies a result chosen by discriminator.
// The discriminator reads the source's result as shared by the records of all its subjects, once per result:
// reading each record's body would cost N results' worth for N subjects that collide.
func disambiguateBy(results []Result, discriminator func(body []byte) []byte) []Result {
	count := make(map[string]int, len(results))
	keys := make([]string, len(results))
	for i := range results {
		keys[i] = results[i].Key()
		count[keys[i]]++
	}
	type shared struct {
		first *byte
		n     int
	}
	suffixes := map[shared]string{}
	for i := range results {
		if count[keys[i]] <= 1 {
			continue
		}
		text := results[i].Body.Text
		id := shared{n: len(text)}
		if len(text) > 0 {
			id.first = &text[0]
		}
		suffix, ok := suffixes[id]
		if !ok {
			sum := sha256.Sum256(discriminator(text))
			suffix = "#" + hex.EncodeToString(sum[:4])
			suffixes[id] = suffix
		}
		results[i].Rule += suffix
	}
	return results
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
