// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import "time"

// Resource identifies the Kubernetes object a result is about.
type Resource struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        string
}

// IsZero reports whether no field of r is set.
func (r Resource) IsZero() bool { return r == Resource{} }

// Report identifies the custom resource a result was read from.
type Report struct {
	Kind      string
	Namespace string
	Name      string
}

// Result is one policy outcome for one subject resource: the unit of every record this distribution emits.
type Result struct {
	// Cluster is written as the resource attribute AttrClusterName, not on the record.
	Cluster string

	Source   string
	Policy   string
	Rule     string
	Category string
	Severity Severity
	Outcome  Outcome
	// Scored is nil when the source does not say whether the result counts towards a score.
	Scored  *bool
	Message string

	Resource Resource
	Report   Report

	State State
	// Timestamp is when the policy engine produced the result; zero when the source does not say.
	Timestamp time.Time

	// Vulnerability is set on results that are one vulnerable package each. Like FailedChecks it describes
	// the result without identifying it: it is in neither the key nor the ID, so a value that changes alone
	// (a fix version published later) emits nothing until the outcome or message changes.
	Vulnerability *Vulnerability
	// FailedChecks is the number of failing checks behind a result that aggregates checks (a compliance
	// control); nil when the result is not such an aggregate or the source did not evaluate it.
	FailedChecks *int64
	// Scan makes the result a completed run of a scan, written as a policy.scan record. Its Run is part of the
	// ID, so each run has an ID of its own.
	Scan *ScanRun
}

// Vulnerability is a scanner's finding about one package. Empty fields are unknown to the scanner.
type Vulnerability struct {
	ID string
	// Score is the base score; nil when the scanner gave none. ScoreVersion is its CVSS version ("3").
	Score        *float64
	ScoreVersion string
	// Reference is the advisory's URL.
	Reference string

	PackageName    string
	PackageVersion string
	// PackageFixedVersion is the version, or comma-separated versions, that fix it; "" when there is no fix.
	PackageFixedVersion string
	PackagePath         string
	PackageType         string
}
