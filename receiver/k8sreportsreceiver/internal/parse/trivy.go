// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package parse // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver/internal/parse"

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// trivySource names the operator, not report.scanner.name ("Trivy"): users configure and filter on the
// component that writes the reports, and the scanner block stays visible to whoever reads the CR.
const trivySource = "trivy-operator"

const trivyVulnerabilityCategory = "vulnerability"

// trivyLabelPrefixes are tried in order. starboard, trivy-operator's predecessor, and the earlier imgvuln
// wrote the same aquasecurity.github.io/v1alpha1 kinds under their own label prefix, and such reports
// outlive the operator that wrote them.
var trivyLabelPrefixes = []string{"trivy-operator.", "starboard.", "imgvuln."}

// trivyMeta is the part of a trivy-operator report's metadata that ObjectMeta does not keep.
type trivyMeta struct {
	// Annotations hold the subject's name when it is not a valid label value (longer than 63 characters, or
	// an RBAC name with colons); the label then carries only a hash of it under "resource.name-hash".
	Annotations     map[string]string `json:"annotations"`
	OwnerReferences []struct {
		ObjectRef
		Controller bool `json:"controller"`
	} `json:"ownerReferences"`
}

type vulnerabilityReport struct {
	Metadata trivyMeta `json:"metadata"`
	Report   struct {
		UpdateTimestamp string            `json:"updateTimestamp"`
		Vulnerabilities []json.RawMessage `json:"vulnerabilities"`
	} `json:"report"`
}

type trivyVulnerability struct {
	VulnerabilityID  string `json:"vulnerabilityID"`
	Resource         string `json:"resource"`
	InstalledVersion string `json:"installedVersion"`
	FixedVersion     string `json:"fixedVersion"`
	// Score is the CVSS v3 base score: trivy-operator keeps no other version in this field.
	Score       *float64 `json:"score"`
	PrimaryLink string   `json:"primaryLink"`
	PackagePath string   `json:"packagePath"`
	PackageType string   `json:"packageType"`
	Target      string   `json:"target"`
	Severity    string   `json:"severity"`
	Title       string   `json:"title"`
}

func (v *trivyVulnerability) model() *policyresult.Vulnerability {
	out := &policyresult.Vulnerability{ID: v.VulnerabilityID, Score: v.Score, Reference: v.PrimaryLink,
		PackageName: v.Resource, PackageVersion: v.InstalledVersion, PackageFixedVersion: v.FixedVersion,
		PackagePath: v.PackagePath, PackageType: v.PackageType}
	if v.Score != nil {
		out.ScoreVersion = "3"
	}
	return out
}

// VulnerabilityReport emits one failing result per listed vulnerability. report.summary is ignored: its
// counts are not guaranteed to match the list (trivy-operator's own fixtures carry the counts of another
// scan), so the entries are the only truth.
//
// A report covers one container of one workload; the rule is "<container>/<package>" so that the same CVE
// in the same package of two containers of one workload, which share policy and subject, keeps two keys.
// A ClusterVulnerabilityReport has the same shape: its subject is trivy's ClusterSbomReport of the cluster
// (KBOM) and its container "k8s-cluster", and it lists the vulnerabilities of the cluster's own components.
func VulnerabilityReport(obj *Object, budget Budget) ([]Result, error) {
	var rep vulnerabilityReport
	if err := json.Unmarshal(obj.Raw, &rep); err != nil {
		return nil, err
	}
	subject, container := trivySubject(obj, &rep.Metadata)
	ts := parseRFC3339(rep.Report.UpdateTimestamp)

	f := fanout{budget: budget}
	if !f.addEntries(rep.Report.Vulnerabilities) {
		return nil, f.err()
	}
	out := make([]Result, 0, len(rep.Report.Vulnerabilities))
	vulns := make([]trivyVulnerability, 0, len(rep.Report.Vulnerabilities))
	for i, raw := range rep.Report.Vulnerabilities {
		var v trivyVulnerability
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("report.vulnerabilities[%d]: %w", i, err)
		}
		vulns = append(vulns, v)
		rule := v.Resource
		if container != "" {
			rule = container + "/" + v.Resource
		}
		out = append(out, Result{Body: WholeBody(raw), Result: policyresult.Result{
			Source:   trivySource,
			Policy:   v.VulnerabilityID,
			Rule:     rule,
			Category: trivyVulnerabilityCategory,
			// UNKNOWN maps to no severity; the entry in the body keeps it.
			Severity:      policyresult.ParseSeverity(v.Severity),
			Outcome:       policyresult.OutcomeFail,
			Message:       firstNonEmpty(v.Title, v.VulnerabilityID),
			Resource:      subject,
			Report:        obj.Report(),
			Timestamp:     ts,
			Vulnerability: v.model(),
		}})
	}
	// One image can hold a package more than once (two jars of one library, an OS package and a copy bundled
	// in a binary). Only those entries get a longer rule, so that the common case keeps a rule that does not
	// change when the package is upgraded to a version that is still vulnerable.
	qualifyCollisions(out, func(i int) string { return suffixIf("@", vulns[i].InstalledVersion) })
	qualifyCollisions(out, func(i int) string {
		return suffixIf(":", firstNonEmpty(vulns[i].PackagePath, vulns[i].Target))
	})
	return Disambiguate(out), nil
}

type trivyChecksReport struct {
	Metadata trivyMeta `json:"metadata"`
	Report   struct {
		UpdateTimestamp string            `json:"updateTimestamp"`
		Checks          []json.RawMessage `json:"checks"`
	} `json:"report"`
}

type trivyCheck struct {
	CheckID  string   `json:"checkID"`
	Title    string   `json:"title"`
	Category string   `json:"category"`
	Severity string   `json:"severity"`
	Success  *bool    `json:"success"`
	Messages []string `json:"messages"`
	Scope    *struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"scope"`
}

// TrivyChecks emits one result per check. It reads every kind with the report.checks shape:
// (Cluster)ConfigAuditReport, (Cluster)RbacAssessmentReport and (Cluster)InfraAssessmentReport; the last two
// have no updateTimestamp, so their results have no time. trivy-operator drops passing checks unless
// configured to keep them, so a fixed check usually shows up as a result that disappears, not as a pass.
func TrivyChecks(obj *Object, budget Budget) ([]Result, error) {
	var rep trivyChecksReport
	if err := json.Unmarshal(obj.Raw, &rep); err != nil {
		return nil, err
	}
	subject, container := trivySubject(obj, &rep.Metadata)
	ts := parseRFC3339(rep.Report.UpdateTimestamp)

	f := fanout{budget: budget}
	if !f.addEntries(rep.Report.Checks) {
		return nil, f.err()
	}

	out := make([]Result, 0, len(rep.Report.Checks))
	for i, raw := range rep.Report.Checks {
		var c trivyCheck
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("report.checks[%d]: %w", i, err)
		}
		// Checks are per workload and normally name no container; a check scoped to one part of the object
		// (a container, a ConfigMap key) is told apart from the same check on another part.
		rule := container
		if c.Scope != nil && c.Scope.Value != "" {
			rule = c.Scope.Value
			if !strings.EqualFold(c.Scope.Type, "Container") {
				rule = c.Scope.Type + ":" + c.Scope.Value
			}
		}
		pr := Result{Body: WholeBody(raw), Result: policyresult.Result{
			Source:    trivySource,
			Policy:    c.CheckID,
			Rule:      rule,
			Category:  c.Category,
			Severity:  policyresult.ParseSeverity(c.Severity),
			Message:   firstNonEmpty(strings.Join(c.Messages, "; "), c.Title),
			Resource:  subject,
			Report:    obj.Report(),
			Timestamp: ts,
		}}
		// success is required by the CRD; a check without it keeps no outcome rather than an invented one.
		if c.Success != nil {
			pr.Outcome = policyresult.OutcomeFail
			if *c.Success {
				pr.Outcome = policyresult.OutcomePass
			}
		}
		out = append(out, pr)
	}
	return Disambiguate(out), nil
}

type exposedSecretReport struct {
	Metadata trivyMeta `json:"metadata"`
	Report   struct {
		UpdateTimestamp string            `json:"updateTimestamp"`
		Secrets         []json.RawMessage `json:"secrets"`
	} `json:"report"`
}

type trivySecret struct {
	Target   string `json:"target"`
	RuleID   string `json:"ruleID"`
	Title    string `json:"title"`
	Category string `json:"category"`
	Severity string `json:"severity"`
}

// ExposedSecretReport emits one failing result per secret found in a container image; the rule is
// "<container>/<file>". The masked match stays in the body only: it is the line around the secret, and an
// edit of that line is not a change of the finding. Two secrets of one rule in one file are told apart by
// their body (the CRD records no line number).
func ExposedSecretReport(obj *Object, budget Budget) ([]Result, error) {
	var rep exposedSecretReport
	if err := json.Unmarshal(obj.Raw, &rep); err != nil {
		return nil, err
	}
	subject, container := trivySubject(obj, &rep.Metadata)
	ts := parseRFC3339(rep.Report.UpdateTimestamp)

	f := fanout{budget: budget}
	if !f.addEntries(rep.Report.Secrets) {
		return nil, f.err()
	}
	out := make([]Result, 0, len(rep.Report.Secrets))
	for i, raw := range rep.Report.Secrets {
		var s trivySecret
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("report.secrets[%d]: %w", i, err)
		}
		rule := s.Target
		if container != "" {
			rule = container + "/" + s.Target
		}
		out = append(out, Result{Body: WholeBody(raw), Result: policyresult.Result{
			Source:    trivySource,
			Policy:    s.RuleID,
			Rule:      rule,
			Category:  s.Category,
			Severity:  policyresult.ParseSeverity(s.Severity),
			Outcome:   policyresult.OutcomeFail,
			Message:   firstNonEmpty(s.Title, s.RuleID),
			Resource:  subject,
			Report:    obj.Report(),
			Timestamp: ts,
		}})
	}
	return Disambiguate(out), nil
}

// trivySubject finds the object a trivy-operator report is about, and the container for per-container
// reports. The operator's labels name it; the controller ownerReference is the fallback for reports without
// them and supplies the apiVersion and UID the labels lack. Without either the result is identified by the
// report itself.
func trivySubject(obj *Object, meta *trivyMeta) (policyresult.Resource, string) {
	labels := obj.Metadata.Labels
	var owner *ObjectRef
	for i := range meta.OwnerReferences {
		if meta.OwnerReferences[i].Controller {
			owner = &meta.OwnerReferences[i].ObjectRef
			break
		}
	}

	for _, p := range trivyLabelPrefixes {
		kind := labels[p+"resource.kind"]
		name := firstNonEmpty(labels[p+"resource.name"], meta.Annotations[p+"resource.name"])
		if kind == "" || name == "" {
			continue
		}
		ns, ok := labels[p+"resource.namespace"]
		if !ok {
			// Subjects of namespaced reports live in the report's namespace.
			ns = obj.Metadata.Namespace
		}
		res := policyresult.Resource{Kind: kind, Namespace: ns, Name: name}
		if owner != nil && owner.Kind == kind && owner.Name == name {
			res.APIVersion, res.UID = owner.APIVersion, owner.UID
		}
		return res, labels[p+"container.name"]
	}

	if owner != nil {
		// trivy-operator keeps a report in its subject's namespace, and cluster-scoped subjects get
		// cluster-scoped reports, so the report's namespace is the subject's.
		res := owner.Resource()
		res.Namespace = obj.Metadata.Namespace
		container := ""
		for _, p := range trivyLabelPrefixes {
			container = firstNonEmpty(container, labels[p+"container.name"])
		}
		return res, container
	}
	return policyresult.Resource{}, ""
}

// qualifyCollisions appends suffix(i) to the rule of every result that shares policy and rule with another
// one. All results of one report have the same subject, so policy and rule decide whether keys collide.
func qualifyCollisions(results []Result, suffix func(i int) string) {
	type id struct{ policy, rule string }
	count := make(map[id]int, len(results))
	for i := range results {
		count[id{results[i].Policy, results[i].Rule}]++
	}
	for i := range results {
		if count[id{results[i].Policy, results[i].Rule}] > 1 {
			results[i].Rule += suffix(i)
		}
	}
}

func suffixIf(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// parseRFC3339 reads an optional timestamp. A value that does not parse leaves the result without a time
// rather than failing the whole report.
func parseRFC3339(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
