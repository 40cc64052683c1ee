package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"encoding/json"
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
// to emit a resolved record for every result when the report goes away, but no message or body.
type emittedReport struct {
	UID             string         `json:"u,omitempty"`
	ResourceVersion string         `json:"v,omitempty"`
	Results         []storedResult `json:"r,omitempty"`
}

type storedResult struct {
	Key string `json:"k"`
	ID  string `json:"i"`
	// Result keeps the identity and outcome; Message and Timestamp are dropped to bound memory.
	Result storedFields `json:"f"`
}

// storedFields is policyresult.Result without message and timestamp, with short JSON names because every
// result of every report is persisted.
type storedFields struct {
	Source   string `json:"s,omitempty"`
	Policy   string `json:"p,omitempty"`
	Rule     string `json:"r,omitempty"`
	Category string `json:"c,omitempty"`
	Severity string `json:"sv,omitempty"`
	Outcome  string `json:"o,omitempty"`
	Scored   *bool  `json:"sc,omitempty"`

	ResAPIVersion string `json:"ra,omitempty"`
	ResKind       string `json:"rk,omitempty"`
	ResNamespace  string `json:"rn,omitempty"`
	ResName       string `json:"rm,omitempty"`
	ResUID        string `json:"ru,omitempty"`

	RepKind      string `json:"pk,omitempty"`
	RepNamespace string `json:"pn,omitempty"`
	RepName      string `json:"pm,omitempty"`
}

// intern shares the backing array of strings that repeat across thousands of results (policy names,
// namespaces, kinds), which is most of the memory the emitted state takes on a big cluster.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

func storeResult(r *policyresult.Result, key, id string) storedResult {
	return storedResult{Key: key, ID: id, Result: storedFields{
		Source: intern(r.Source), Policy: intern(r.Policy), Rule: intern(r.Rule), Category: intern(r.Category),
		Severity: string(r.Severity), Outcome: string(r.Outcome), Scored: r.Scored,
		ResAPIVersion: intern(r.Resource.APIVersion), ResKind: intern(r.Resource.Kind),
		ResNamespace: intern(r.Resource.Namespace), ResName: r.Resource.Name, ResUID: r.Resource.UID,
		RepKind: intern(r.Report.Kind), RepNamespace: intern(r.Report.Namespace), RepName: r.Report.Name,
	}}
}

func (s *storedResult) result(cluster string) policyresult.Result {
	f := &s.Result
	return policyresult.Result{
		Cluster: cluster, Source: f.Source, Policy: f.Policy, Rule: f.Rule, Category: f.Category,
		Severity: policyresult.Severity(f.Severity), Outcome: policyresult.Outcome(f.Outcome), Scored: f.Scored,
		Resource: policyresult.Resource{APIVersion: f.ResAPIVersion, Kind: f.ResKind, Namespace: f.ResNamespace, Name: f.ResName, UID: f.ResUID},
		Report:   policyresult.Report{Kind: f.RepKind, Namespace: f.RepNamespace, Name: f.RepName},
	}
}

// outRecord is one record to emit: a result with its state, and the source's result as the body.
type outRecord struct {
	result policyresult.Result
	body   json.RawMessage
}

// diff compares a report's new results with what was emitted for it. It returns the records to emit (new and
// changed results, and resolved ones when emitResolved) and the state to remember once they are accepted.
// deleted means the report is gone; partial that results missing from next are kept rather than resolved.
func diff(prev *emittedReport, next []parsedResult, deleted, partial, emitResolved bool, cluster string) ([]outRecord, []storedResult) {
	var prevByKey map[string]*storedResult
	if prev != nil {
		prevByKey = make(map[string]*storedResult, len(prev.Results))
		for i := range prev.Results {
			prevByKey[prev.Results[i].Key] = &prev.Results[i]
		}
	}
	var out []outRecord
	var stored []storedResult
	if !deleted {
		stored = make([]storedResult, 0, len(next))
		seen := make(map[string]struct{}, len(next))
		for i := range next {
			r := &next[i].Result
			key, id := r.Key(), r.ID()
			if _, dup := seen[key]; dup {
				continue // disambiguate() makes this impossible for parsed reports; kept as a guard
			}
			seen[key] = struct{}{}
			stored = append(stored, storeResult(r, key, id))
			old, existed := prevByKey[key]
			switch {
			case !existed:
				r.State = policyresult.StateNew
			case old.ID != id:
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
			for i := range prev.Results {
				if _, kept := prevByKey[prev.Results[i].Key]; kept {
					stored = append(stored, prev.Results[i])
				}
			}
			return out, stored
		}
	}
	if emitResolved && prev != nil {
		// Keep the source's order for resolved records too, so the output is deterministic.
		for i := range prev.Results {
			if _, gone := prevByKey[prev.Results[i].Key]; gone {
				r := prev.Results[i].result(cluster)
				r.State = policyresult.StateResolved
				out = append(out, outRecord{result: r})
			}
		}
	}
	return out, stored
}
