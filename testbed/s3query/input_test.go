// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3query

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// The input is a fleet's change stream, made from an index alone so that a million records need no state to
// check the answers against: results numbered 0 … n-1 first, then a later record of a quarter of them.
//
//   - i%4 == 0: a trivy vulnerability (CVE from cves, fixable unless (i/4)%3 == 0), failing; when i%8 == 0 it is
//     resolved later (the image was upgraded).
//   - otherwise a kyverno Pod Security Standards result, warning when i%17 == 0, else failing when i%3 == 0, else
//     passing; when i%8 == 1 its outcome flips later (fail to pass, anything else to fail: state changed).
//
// Result i is in cluster (i/3)%3 (not i%3, which would tie the cluster to the outcome), namespace i%40 and a pod
// of its own.
var clusters = []string{"prod-eu-1", "prod-us-1", "staging"}

// cve is a vulnerability of the input, with its CVSS base score.
type cve struct {
	id, pkg string
	score   float64
}

var cves = []cve{
	{"CVE-2026-0101", "openssl", 9.8}, {"CVE-2026-0102", "glibc", 8.1}, {"CVE-2026-0103", "zlib", 8.0},
	{"CVE-2026-0104", "curl", 7.9}, {"CVE-2026-0105", "busybox", 5.3}, {"CVE-2026-0106", "libxml2", 8.6},
	{"CVE-2026-0107", "expat", 3.1}, {"CVE-2026-0108", "ncurses", 6.5}, {"CVE-2026-0109", "sqlite", 7.5},
	{"CVE-2026-0110", "openssh", 8.8}, {"CVE-2026-0111", "gnutls", 4.2},
}

var pssChecks = []string{"privileged-containers", "host-namespaces", "host-path-volumes", "capabilities", "seccomp",
	"run-as-non-root", "volume-types"}

// base is when the first record was produced: the n results are spread over the hour from 09:00, their later
// records over the next hour, so that a batch becomes one object per cluster (the exporter's partitions are the
// cluster and the hour) as in a fleet's steady stream.
var base = time.Date(2026, 3, 7, 9, 0, 0, 0, time.UTC)

// input is the records of n results: n base records and n/4 later ones (n a multiple of 8).
type input struct{ n int }

// records is how many log records the input holds.
func (in input) records() int { return in.n + in.n/4 }

// hasFollowUp is whether result i gets a later record.
func hasFollowUp(i int) bool { return i%8 == 0 || i%8 == 1 }

// result is result i as first reported (followUp false) or as reported later.
func (in input) result(i int, followUp bool) policyresult.Result {
	cluster := clusters[(i/3)%len(clusters)]
	ns := fmt.Sprintf("team-%02d", i%40)
	r := policyresult.Result{
		Cluster:   cluster,
		Resource:  policyresult.Resource{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("checkout-7d9f8b6c4-%07d", i), UID: fmt.Sprintf("6f1c2a4e-8d3b-4c5f-9a7e-%012d", i)},
		Report:    policyresult.Report{Kind: "PolicyReport", Namespace: ns, Name: fmt.Sprintf("pol-%07d", i)},
		State:     policyresult.StateNew,
		Timestamp: base.Add(time.Duration(i) * time.Hour / time.Duration(in.n)),
	}
	if followUp {
		r.Timestamp = r.Timestamp.Add(time.Hour)
	}
	if i%4 == 0 {
		c := cves[(i/4)%len(cves)]
		score := c.score
		fixed := ""
		if (i/4)%3 != 0 {
			fixed = "3.0.16-r0"
		}
		r.Source, r.Policy, r.Rule = "trivy", c.id, "app/"+c.pkg
		r.Category = "Vulnerability Scan"
		r.Severity = severityOf(c.score)
		r.Outcome = policyresult.OutcomeFail
		r.Message = c.pkg + ": a vulnerability with a CVSS base score of " + fmt.Sprint(c.score)
		r.Vulnerability = &policyresult.Vulnerability{ID: c.id, Score: &score, ScoreVersion: "3",
			Reference: "https://avd.aquasec.com/nvd/" + c.id, PackageName: c.pkg, PackageVersion: "3.0.8-r0",
			PackageFixedVersion: fixed, PackageType: "alpine"}
		if followUp {
			r.State = policyresult.StateResolved
		}
		return r
	}
	check := pssChecks[i%len(pssChecks)]
	r.Source, r.Policy, r.Rule = "kyverno", "disallow-"+check, check
	r.Category = "Pod Security Standards (Restricted)"
	r.Severity = policyresult.SeverityHigh
	r.Outcome = policyresult.OutcomePass
	switch {
	case i%17 == 0:
		r.Outcome = policyresult.OutcomeWarn
	case i%3 == 0:
		r.Outcome = policyresult.OutcomeFail
	}
	if followUp {
		r.State = policyresult.StateChanged
		if r.Outcome == policyresult.OutcomeFail {
			r.Outcome = policyresult.OutcomePass
		} else {
			r.Outcome = policyresult.OutcomeFail
		}
	}
	r.Message = fmt.Sprintf("validation error: %s is not allowed by the restricted profile (%s). rule %s failed at path /spec/containers/0/securityContext/", check, r.Outcome, check)
	return r
}

func severityOf(score float64) policyresult.Severity {
	switch {
	case score >= 9:
		return policyresult.SeverityCritical
	case score >= 7:
		return policyresult.SeverityHigh
	case score >= 4:
		return policyresult.SeverityMedium
	}
	return policyresult.SeverityLow
}

// latest is result i as its last record says.
func (in input) latest(i int) policyresult.Result { return in.result(i, hasFollowUp(i)) }

// batches yields the records in batches of size, in the order a watcher emits them: every result, then the
// later records. Each batch holds one resource per cluster, as a fleet's collectors send them.
func (in input) batches(size int, yield func(plog.Logs)) {
	var order []int // record j's result; follow-ups are n+i
	for i := range in.n {
		order = append(order, i)
	}
	for i := range in.n {
		if hasFollowUp(i) {
			order = append(order, in.n+i)
		}
	}
	for start := 0; start < len(order); start += size {
		ld := plog.NewLogs()
		byCluster := map[string]plog.LogRecordSlice{}
		for _, j := range order[start:min(start+size, len(order))] {
			r := in.result(j%in.n, j >= in.n)
			lrs, ok := byCluster[r.Cluster]
			if !ok {
				rl := ld.ResourceLogs().AppendEmpty()
				policyresult.WriteResource(rl.Resource(), r.Cluster)
				lrs = rl.ScopeLogs().AppendEmpty().LogRecords()
				byCluster[r.Cluster] = lrs
			}
			lr := lrs.AppendEmpty()
			policyresult.WriteLogRecord(&r, lr)
			lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(r.Timestamp.Add(1500 * time.Millisecond)))
			engineBody(lr.Body().SetEmptyMap(), &r)
		}
		yield(ld)
	}
}

// engineBody is the engine's own entry, the body the receivers keep: a kyverno PolicyReport result or a
// trivy-operator vulnerability.
func engineBody(m pcommon.Map, r *policyresult.Result) {
	if v := r.Vulnerability; v != nil {
		m.PutStr("vulnerabilityID", v.ID)
		m.PutStr("resource", v.PackageName)
		m.PutStr("installedVersion", v.PackageVersion)
		m.PutStr("fixedVersion", v.PackageFixedVersion)
		m.PutDouble("score", *v.Score)
		m.PutStr("severity", string(r.Severity))
		m.PutStr("primaryLink", v.Reference)
		m.PutStr("title", r.Message)
		return
	}
	m.PutStr("policy", r.Policy)
	m.PutStr("rule", r.Rule)
	m.PutStr("result", string(r.Outcome))
	m.PutStr("message", r.Message)
	m.PutBool("scored", true)
	m.PutStr("source", r.Source)
	props := m.PutEmptyMap("properties")
	props.PutStr("controls", r.Rule)
	props.PutStr("standard", "restricted")
	props.PutStr("version", "latest")
	m.PutInt("timestamp", r.Timestamp.Unix())
}

// finding is a row of the first query: a fixable vulnerability of CVSS ≥ 8 that still fails.
type finding struct {
	Cluster, Namespace, Pod, CVE, Package string
	Score                                 float64
	FixedVersion                          string
}

// policyCount is a row of the second query: the failing results of a policy.
type policyCount struct {
	Policy  string
	Failing int64
}

// failing is whether a result's latest record says it fails now.
func failing(r *policyresult.Result) bool {
	return r.Outcome == policyresult.OutcomeFail && r.State != policyresult.StateResolved
}

// want is what the two queries must answer, from the input alone.
func (in input) want() ([]finding, []policyCount) {
	var findings []finding
	perPolicy := map[string]int64{}
	for i := range in.n {
		r := in.latest(i)
		if !failing(&r) {
			continue
		}
		perPolicy[r.Policy]++
		if v := r.Vulnerability; v != nil && *v.Score >= 8 && v.PackageFixedVersion != "" {
			findings = append(findings, finding{r.Cluster, r.Resource.Namespace, r.Resource.Name, v.ID, v.PackageName, *v.Score, v.PackageFixedVersion})
		}
	}
	slices.SortFunc(findings, compareFindings)
	counts := make([]policyCount, 0, len(perPolicy))
	for p, n := range perPolicy {
		counts = append(counts, policyCount{p, n})
	}
	slices.SortFunc(counts, func(a, b policyCount) int { return cmp.Compare(a.Policy, b.Policy) })
	return findings, counts
}

// compareFindings orders findings as the query does: by cluster, namespace, pod and CVE.
func compareFindings(a, b finding) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.CVE, b.CVE))
}
