// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"unique"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// objKey identifies a report object across versions: a report deleted and re-created under the same name is
// the same report to its readers, and its results keep their keys.
type objKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// String names the object in logs and errors the way kubectl does.
func (k objKey) String() string {
	name := k.gvr.Resource + "." + k.gvr.Group + " "
	if k.namespace != "" {
		name += k.namespace + "/"
	}
	return name + k.name
}

// objRef names the report object in logs and errors the way kubectl does.
func objRef(o *parse.Object) string {
	return objKey{o.GVR, o.Metadata.Namespace, o.Metadata.Name}.String()
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
	// refused is the version of the report that was skipped as too large, if the latest one was: the results
	// are still those of the last version read, and that version is skipped without being read again.
	refused *refusal
}

// refusal is a report version that fanned out to more than the budget, and what it fanned out to.
type refusal struct {
	resourceVersion string
	size            parse.Size
}

// refusing is the state after version rv of the report was skipped as too large: what was emitted before
// stays emitted (a report that cannot be read is not one whose findings were fixed), and rv is remembered so
// that it is not read again, here or after a restart, unless a budget it fits is configured.
func (e *emittedReport) refusing(rv string, size parse.Size) *emittedReport {
	next := &emittedReport{}
	if e != nil {
		*next = *e
	}
	next.refused = &refusal{resourceVersion: rv, size: size}
	return next
}

// ruleIdentity is what results of many reports share; unique.Handle stores one copy of each in the process.
type ruleIdentity struct {
	Source, Policy, Rule, Category string
	Severity                       policyresult.Severity
	// Scored is -1 unknown, 0 false, 1 true, or scoredScanRun.
	Scored int8
}

// scoredScanRun marks a result that is a scan run (policy.scan), which has no score, is replaced by the next
// run and is never resolved. It is a value of Scored rather than a field of its own because every result of
// every report stores and persists its identity, and scan runs are few.
const scoredScanRun int8 = 2

func (id ruleIdentity) scanRun() bool { return id.Scored == scoredScanRun }

// storedResult is one result of an emittedReport: 48 bytes (the two hashes, a handle, the subject's index and
// the outcome in one byte), kept for every result of the cluster.
type storedResult struct {
	// hashes are the result's key and ID as computed when it was diffed, and written into its records.
	hashes   policyresult.Hashes
	identity unique.Handle[ruleIdentity]
	subject  int32 // index into subjects; -1 when the result has none
	outcome  outcomeCode
}

// outcomeCode is an outcome in one byte: 0 none, then policyresult.Outcomes in their order. The parsers set
// no other outcome.
type outcomeCode uint8

func codeOf(o policyresult.Outcome) outcomeCode {
	for i, v := range policyresult.Outcomes {
		if v == o {
			return outcomeCode(i + 1)
		}
	}
	return 0
}

func (c outcomeCode) outcome() policyresult.Outcome {
	if c == 0 || int(c) > len(policyresult.Outcomes) {
		return ""
	}
	return policyresult.Outcomes[c-1]
}

func scoredOf(r *policyresult.Result) int8 {
	b := r.Scored
	switch {
	case r.Scan != nil:
		return scoredScanRun
	case b == nil:
		return -1
	case *b:
		return 1
	}
	return 0
}

// stateBuilder builds an emittedReport. It finds each subject's index through a map, because one report may
// list tens of thousands of subjects; the map goes with the builder, as the state is kept for every report.
type stateBuilder struct {
	state    *emittedReport
	subjects map[policyresult.Resource]int32
}

func newStateBuilder(results int) *stateBuilder {
	return &stateBuilder{state: &emittedReport{results: make([]storedResult, 0, results)},
		subjects: make(map[policyresult.Resource]int32, results)}
}

func (b *stateBuilder) subjectIndex(r policyresult.Resource) int32 {
	if r.IsZero() {
		return -1
	}
	if i, ok := b.subjects[r]; ok {
		return i
	}
	i := int32(len(b.state.subjects)) //nolint:gosec // G115: max_report_records bounds the subjects
	b.state.subjects = append(b.state.subjects, r)
	b.subjects[r] = i
	return i
}

func (b *stateBuilder) add(r *policyresult.Result, h policyresult.Hashes) {
	b.state.report = r.Report
	b.state.results = append(b.state.results, storedResult{
		hashes: h, outcome: codeOf(r.Outcome), subject: b.subjectIndex(r.Resource),
		identity: unique.Make(ruleIdentity{Source: r.Source, Policy: r.Policy, Rule: r.Rule, Category: r.Category,
			Severity: r.Severity, Scored: scoredOf(r)}),
	})
}

// result rebuilds the i-th result, without its message and timestamp.
func (e *emittedReport) result(i int, cluster string) policyresult.Result {
	s := &e.results[i]
	id := s.identity.Value()
	r := policyresult.Result{
		Cluster: cluster, Source: id.Source, Policy: id.Policy, Rule: id.Rule, Category: id.Category,
		Severity: id.Severity, Outcome: s.outcome.outcome(), Report: e.report,
	}
	switch {
	case id.scanRun():
		r.Scan = &policyresult.ScanRun{}
	case id.Scored >= 0:
		scored := id.Scored == 1
		r.Scored = &scored
	}
	if s.subject >= 0 {
		r.Resource = e.subjects[s.subject]
	}
	return r
}

// outRecord is one record to emit: a result with its state, its key and ID, and the source's result as the
// body. It points into the parsed report (or, for a resolved result, at the result rebuilt from the state), so
// that a report's records cost no copy of its results while they wait for their batches.
type outRecord struct {
	*parse.Result
	hashes policyresult.Hashes
}

// diff compares a report's new results with what was emitted for it. It returns the records to emit (new and
// changed results, and resolved ones when emitResolved) and the state to remember once they are accepted.
// deleted means the report is gone (the state is then nil); partial that results missing from next are kept
// rather than resolved. A scan run is never resolved: it is an event that happened, replaced by the next run.
func diff(prev *emittedReport, next []parse.Result, deleted, partial, emitResolved bool, cluster string) ([]outRecord, *emittedReport) {
	var prevByKey map[policyresult.Hash]int
	if prev != nil {
		prevByKey = make(map[policyresult.Hash]int, len(prev.results))
		for i := range prev.results {
			prevByKey[prev.results[i].hashes.Key] = i
		}
	}
	var out []outRecord
	var state *emittedReport
	if !deleted {
		b := newStateBuilder(len(next))
		state = b.state
		seen := make(map[policyresult.Hash]struct{}, len(next))
		for i := range next {
			r := &next[i].Result
			h := r.Hashes()
			if _, dup := seen[h.Key]; dup {
				continue // parse.Disambiguate makes this impossible for parsed reports; kept as a guard
			}
			seen[h.Key] = struct{}{}
			b.add(r, h)
			old, existed := prevByKey[h.Key]
			switch {
			case !existed:
				r.State = policyresult.StateNew
			case prev.results[old].hashes.ID != h.ID:
				r.State = policyresult.StateChanged
			default:
				continue
			}
			out = append(out, outRecord{&next[i], h}) //nolint:gosec // G602: i ranges over next
		}
		for k := range seen {
			delete(prevByKey, k)
		}
		if partial && prev != nil {
			for i := range prev.results {
				if _, kept := prevByKey[prev.results[i].hashes.Key]; kept {
					r := prev.result(i, cluster)
					b.add(&r, prev.results[i].hashes)
				}
			}
			return out, state
		}
	}
	if emitResolved && prev != nil {
		// Keep the source's order for resolved records too, so the output is deterministic.
		for i := range prev.results {
			if _, gone := prevByKey[prev.results[i].hashes.Key]; gone && !prev.results[i].identity.Value().scanRun() {
				r := &parse.Result{Result: prev.result(i, cluster)}
				r.State = policyresult.StateResolved
				// A resolved record's ID is that of the last outcome without its message, which the state does not
				// keep, so the rebuilt result is hashed: its key is the stored one, unless cluster_name changed
				// since, and then the record's key must match its cluster attribute.
				out = append(out, outRecord{r, r.Hashes()})
			}
		}
	}
	return out, state
}
