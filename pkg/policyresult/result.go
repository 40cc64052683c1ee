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
}
