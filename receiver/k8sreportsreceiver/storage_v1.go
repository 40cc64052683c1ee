// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unique"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"
)

// The first version of the stored state, read only to migrate it (storage.go): one JSON entry per report under
// its object's path, and an index entry listing them all, rewritten whenever a report came or went.
const (
	storeV1IndexKey = "k8s_reports/v1/index"
	storeV1ReportNS = "k8s_reports/v1/report/"
)

func parseV1StoreKey(s string) (objKey, error) {
	parts := strings.Split(strings.TrimPrefix(s, storeV1ReportNS), "/")
	if !strings.HasPrefix(s, storeV1ReportNS) || len(parts) != 5 {
		return objKey{}, fmt.Errorf("malformed state key %q", s)
	}
	return objKey{gvr: schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]},
		namespace: parts[3], name: parts[4]}, nil
}

// loadV1 reads a state of the first version: the reports, and the keys of every entry it is made of (the
// index, and the entries it lists, even those missing), to be deleted once the state is stored anew. It
// returns no keys when there is no such state.
func loadV1(ctx context.Context, client storage.Client) (map[objKey]*emittedReport, []string, error) {
	raw, err := client.Get(ctx, storeV1IndexKey)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the state index: %w", err)
	}
	if raw == nil {
		return nil, nil, nil
	}
	var keys []string
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, nil, fmt.Errorf("decoding the state index: %w", err)
	}
	ops := make([]*storage.Operation, len(keys))
	for i, k := range keys {
		ops[i] = storage.GetOperation(k)
	}
	if err := client.Batch(ctx, ops...); err != nil {
		return nil, nil, fmt.Errorf("reading the stored reports: %w", err)
	}
	out := make(map[objKey]*emittedReport, len(keys))
	for _, op := range ops {
		k, err := parseV1StoreKey(op.Key)
		if err != nil {
			return nil, nil, err
		}
		if op.Value == nil {
			continue
		}
		r := &emittedReport{}
		if err := json.Unmarshal(op.Value, r); err != nil {
			return nil, nil, fmt.Errorf("decoding the stored state of %s: %w", op.Key, err)
		}
		out[k] = r
	}
	return out, append(keys, storeV1IndexKey), nil
}

// wireReport is the first version's form of an emittedReport, with short names because every result of every
// report was stored.
type wireReport struct {
	UID             string             `json:"u,omitempty"`
	ResourceVersion string             `json:"v,omitempty"`
	Report          wireRef            `json:"p"`
	Subjects        []wireRef          `json:"s,omitempty"`
	Results         []wireStoredResult `json:"r,omitempty"`
	Refused         *wireRefusal       `json:"t,omitempty"`
	_               struct{}           `json:"-"`
}

type wireRefusal struct {
	ResourceVersion string `json:"v"`
	Records         int    `json:"n"`
	Bytes           int64  `json:"b"`
}

type wireRef struct {
	APIVersion string `json:"a,omitempty"`
	Kind       string `json:"k,omitempty"`
	Namespace  string `json:"ns,omitempty"`
	Name       string `json:"n,omitempty"`
	UID        string `json:"u,omitempty"`
}

// wireStoredResult spells the key and ID as the records do (policyresult.Hash's text).
type wireStoredResult struct {
	Key      policyresult.Hash `json:"k"`
	ID       policyresult.Hash `json:"i"`
	Source   string            `json:"so,omitempty"`
	Policy   string            `json:"p,omitempty"`
	Rule     string            `json:"r,omitempty"`
	Category string            `json:"c,omitempty"`
	Severity string            `json:"sv,omitempty"`
	Scored   int8              `json:"sc"`
	Outcome  string            `json:"o,omitempty"`
	Subject  int32             `json:"x"`
}

func (e *emittedReport) UnmarshalJSON(b []byte) error {
	var w wireReport
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = emittedReport{UID: w.UID, ResourceVersion: w.ResourceVersion,
		report: policyresult.Report{Kind: w.Report.Kind, Namespace: w.Report.Namespace, Name: w.Report.Name}}
	if w.Refused != nil {
		e.refused = &refusal{resourceVersion: w.Refused.ResourceVersion,
			size: parse.Size{Records: w.Refused.Records, Bytes: w.Refused.Bytes}}
	}
	for _, s := range w.Subjects {
		e.subjects = append(e.subjects, policyresult.Resource{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, UID: s.UID})
	}
	if len(w.Results) > 0 {
		e.results = make([]storedResult, len(w.Results))
	}
	for i, r := range w.Results {
		if r.Subject < -1 || int(r.Subject) >= len(e.subjects) {
			return fmt.Errorf("result %d names subject %d of %d", i, r.Subject, len(e.subjects))
		}
		o := codeOf(policyresult.Outcome(r.Outcome))
		if o == 0 && r.Outcome != "" {
			return fmt.Errorf("result %d has the unknown outcome %q", i, r.Outcome)
		}
		if r.Scored < -1 || r.Scored > scoredScanRun {
			return fmt.Errorf("result %d has the unknown scored value %d", i, r.Scored)
		}
		e.results[i] = storedResult{
			hashes: policyresult.Hashes{Key: r.Key, ID: r.ID}, outcome: o, subject: r.Subject,
			identity: unique.Make(ruleIdentity{Source: r.Source, Policy: r.Policy, Rule: r.Rule, Category: r.Category,
				Severity: policyresult.Severity(r.Severity), Scored: r.Scored}),
		}
	}
	return nil
}
