package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unique"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// objKey identifies a report object across versions: a report deleted and re-created under the same name is
// the same report to its readers, and its results keep their keys.
type objKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// emittedReport is what downstream has received for one report: enough to diff the next version against and
// to emit a resolved record for every result when the report goes away, but no message or body. It is kept
// for every report of the cluster, so it is laid out to be small: what the results of a report share (the
// report, the subject resources, the policy and rule) is stored once.
type emittedReport struct {
	UID             string
	ResourceVersion string
	report          policyresult.Report
	subjects        []policyresult.Resource
	results         []storedResult
}

// hash128 is a policy.result.key or .id in binary: half the size of the hex string, and comparable.
type hash128 [16]byte

func parseHash(s string) hash128 {
	var h hash128
	_, _ = hex.Decode(h[:], []byte(s))
	return h
}

// ruleIdentity is what results of many reports share; unique.Handle stores one copy of each in the process.
type ruleIdentity struct {
	Source, Policy, Rule, Category string
	Severity                       policyresult.Severity
	Scored                         int8 // -1 unknown, 0 false, 1 true
}

type storedResult struct {
	key, id  hash128
	identity unique.Handle[ruleIdentity]
	outcome  policyresult.Outcome
	subject  int32 // index into subjects; -1 when the result has none
}

func scoredOf(b *bool) int8 {
	switch {
	case b == nil:
		return -1
	case *b:
		return 1
	}
	return 0
}

func (e *emittedReport) subjectIndex(r policyresult.Resource) int32 {
	if r.IsZero() {
		return -1
	}
	for i := range e.subjects {
		if e.subjects[i] == r {
			return int32(i)
		}
	}
	e.subjects = append(e.subjects, r)
	return int32(len(e.subjects) - 1)
}

func (e *emittedReport) add(r *policyresult.Result, key, id hash128) {
	e.report = r.Report
	e.results = append(e.results, storedResult{
		key: key, id: id, outcome: r.Outcome, subject: e.subjectIndex(r.Resource),
		identity: unique.Make(ruleIdentity{Source: r.Source, Policy: r.Policy, Rule: r.Rule, Category: r.Category,
			Severity: r.Severity, Scored: scoredOf(r.Scored)}),
	})
}

// result rebuilds the i-th result, without its message and timestamp.
func (e *emittedReport) result(i int, cluster string) policyresult.Result {
	s := &e.results[i]
	id := s.identity.Value()
	r := policyresult.Result{
		Cluster: cluster, Source: id.Source, Policy: id.Policy, Rule: id.Rule, Category: id.Category,
		Severity: id.Severity, Outcome: s.outcome, Report: e.report,
	}
	if id.Scored >= 0 {
		scored := id.Scored == 1
		r.Scored = &scored
	}
	if s.subject >= 0 {
		r.Resource = e.subjects[s.subject]
	}
	return r
}

// outRecord is one record to emit: a result with its state, and the source's result as the body.
type outRecord struct {
	result policyresult.Result
	body   json.RawMessage
}

// diff compares a report's new results with what was emitted for it. It returns the records to emit (new and
// changed results, and resolved ones when emitResolved) and the state to remember once they are accepted.
// deleted means the report is gone (the state is then nil); partial that results missing from next are kept
// rather than resolved.
func diff(prev *emittedReport, next []parsedResult, deleted, partial, emitResolved bool, cluster string) ([]outRecord, *emittedReport) {
	var prevByKey map[hash128]int
	if prev != nil {
		prevByKey = make(map[hash128]int, len(prev.results))
		for i := range prev.results {
			prevByKey[prev.results[i].key] = i
		}
	}
	var out []outRecord
	var state *emittedReport
	if !deleted {
		state = &emittedReport{results: make([]storedResult, 0, len(next))}
		seen := make(map[hash128]struct{}, len(next))
		for i := range next {
			r := &next[i].Result
			key, id := parseHash(r.Key()), parseHash(r.ID())
			if _, dup := seen[key]; dup {
				continue // disambiguate() makes this impossible for parsed reports; kept as a guard
			}
			seen[key] = struct{}{}
			state.add(r, key, id)
			old, existed := prevByKey[key]
			switch {
			case !existed:
				r.State = policyresult.StateNew
			case prev.results[old].id != id:
				r.State = policyresult.StateChanged
			default:
				continue
			}
			out = append(out, outRecord{result: *r, body: next[i].body})
		}
		for k := range seen {
			delete(prevByKey, k)
		}
		if partial && prev != nil {
			for i := range prev.results {
				if _, kept := prevByKey[prev.results[i].key]; kept {
					r := prev.result(i, cluster)
					state.add(&r, prev.results[i].key, prev.results[i].id)
				}
			}
			return out, state
		}
	}
	if emitResolved && prev != nil {
		// Keep the source's order for resolved records too, so the output is deterministic.
		for i := range prev.results {
			if _, gone := prevByKey[prev.results[i].key]; gone {
				r := prev.result(i, cluster)
				r.State = policyresult.StateResolved
				out = append(out, outRecord{result: r})
			}
		}
	}
	return out, state
}

// wireReport is the persisted form of an emittedReport, with short names because every result of every report
// is stored.
type wireReport struct {
	UID             string             `json:"u,omitempty"`
	ResourceVersion string             `json:"v,omitempty"`
	Report          wireRef            `json:"p"`
	Subjects        []wireRef          `json:"s,omitempty"`
	Results         []wireStoredResult `json:"r,omitempty"`
	_               struct{}           `json:"-"`
}

type wireRef struct {
	APIVersion string `json:"a,omitempty"`
	Kind       string `json:"k,omitempty"`
	Namespace  string `json:"ns,omitempty"`
	Name       string `json:"n,omitempty"`
	UID        string `json:"u,omitempty"`
}

type wireStoredResult struct {
	Key      string `json:"k"`
	ID       string `json:"i"`
	Source   string `json:"so,omitempty"`
	Policy   string `json:"p,omitempty"`
	Rule     string `json:"r,omitempty"`
	Category string `json:"c,omitempty"`
	Severity string `json:"sv,omitempty"`
	Scored   int8   `json:"sc"`
	Outcome  string `json:"o,omitempty"`
	Subject  int32  `json:"x"`
}

func (e *emittedReport) MarshalJSON() ([]byte, error) {
	w := wireReport{UID: e.UID, ResourceVersion: e.ResourceVersion,
		Report: wireRef{Kind: e.report.Kind, Namespace: e.report.Namespace, Name: e.report.Name}}
	for _, s := range e.subjects {
		w.Subjects = append(w.Subjects, wireRef{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, UID: s.UID})
	}
	for _, r := range e.results {
		id := r.identity.Value()
		w.Results = append(w.Results, wireStoredResult{
			Key: hex.EncodeToString(r.key[:]), ID: hex.EncodeToString(r.id[:]),
			Source: id.Source, Policy: id.Policy, Rule: id.Rule, Category: id.Category, Severity: string(id.Severity),
			Scored: id.Scored, Outcome: string(r.outcome), Subject: r.subject,
		})
	}
	return json.Marshal(w)
}

func (e *emittedReport) UnmarshalJSON(b []byte) error {
	var w wireReport
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = emittedReport{UID: w.UID, ResourceVersion: w.ResourceVersion,
		report: policyresult.Report{Kind: w.Report.Kind, Namespace: w.Report.Namespace, Name: w.Report.Name}}
	for _, s := range w.Subjects {
		e.subjects = append(e.subjects, policyresult.Resource{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, UID: s.UID})
	}
	e.results = make([]storedResult, len(w.Results))
	for i, r := range w.Results {
		if r.Subject >= int32(len(e.subjects)) {
			return fmt.Errorf("result %d names subject %d of %d", i, r.Subject, len(e.subjects))
		}
		e.results[i] = storedResult{
			key: parseHash(r.Key), id: parseHash(r.ID), outcome: policyresult.Outcome(r.Outcome), subject: r.Subject,
			identity: unique.Make(ruleIdentity{Source: r.Source, Policy: r.Policy, Rule: r.Rule, Category: r.Category,
				Severity: policyresult.Severity(r.Severity), Scored: r.Scored}),
		}
	}
	return nil
}
