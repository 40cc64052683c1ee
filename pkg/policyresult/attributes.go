// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

// Resource attributes.
const (
	// AttrClusterName names the cluster a record came from. It is part of every result's identity, so results of
	// two clusters never share a key on a shared topic or table.
	AttrClusterName = "k8s.cluster.name"
)

// Log record attributes.
const (
	// AttrEventName holds one of the Event* values. The record's EventName field is set to the same value; the
	// attribute is kept for backends and OTTL statements that read attributes only.
	AttrEventName = "event.name"

	AttrSource   = "policy.source"
	AttrPolicy   = "policy.name"
	AttrRule     = "policy.rule"
	AttrCategory = "policy.category"
	AttrSeverity = "policy.severity"
	AttrResult   = "policy.result"
	AttrScored   = "policy.scored"
	AttrMessage  = "policy.message"

	AttrResultKey   = "policy.result.key"
	AttrResultID    = "policy.result.id"
	AttrResultState = "policy.result.state"

	AttrResourceAPIVersion = "policy.resource.api_version"
	AttrResourceKind       = "policy.resource.kind"
	AttrResourceNamespace  = "policy.resource.namespace"
	AttrResourceName       = "policy.resource.name"
	AttrResourceUID        = "policy.resource.uid"

	AttrReportKind      = "policy.report.kind"
	AttrReportNamespace = "policy.report.namespace"
	AttrReportName      = "policy.report.name"

	// AttrFailedChecks counts the failing checks behind a result that aggregates checks (a compliance control).
	AttrFailedChecks = "policy.checks.failed"
)

// Log record attributes of results that are one vulnerable package each (Result.Vulnerability). The names are
// Elastic Common Schema's, which follow the OpenTelemetry naming rules; OpenTelemetry has no vulnerability
// namespace. package.fixed_version is not in ECS core: it is the name Elastic's vulnerability integrations use.
const (
	AttrVulnerabilityID           = "vulnerability.id"
	AttrVulnerabilityScoreBase    = "vulnerability.score.base"
	AttrVulnerabilityScoreVersion = "vulnerability.score.version"
	AttrVulnerabilityReference    = "vulnerability.reference"
	AttrPackageName               = "package.name"
	AttrPackageVersion            = "package.version"
	AttrPackageFixedVersion       = "package.fixed_version"
	AttrPackagePath               = "package.path"
	AttrPackageType               = "package.type"
)

// Values of AttrEventName.
const (
	EventResult   = "policy.result"
	EventDecision = "policy.decision"
	EventSummary  = "policy.summary"
	// EventScan is a completed run of a compliance scan (Result.Scan).
	EventScan = "policy.scan"
)

// IdentityAttribute is the attribute that identifies a record of event among the records of that event, for
// stores keeping the latest record of each (a compacted Kafka topic, an upsert table): the key of a result or
// a summary or a scan, the ID of a decision. "" for other events.
func IdentityAttribute(event string) string {
	switch event {
	case EventResult:
		return AttrResultKey
	case EventDecision:
		return AttrDecisionID
	case EventSummary:
		return AttrSummaryKey
	case EventScan:
		return AttrScanKey
	}
	return ""
}

// IsResourceAttribute reports whether the model writes name on the resource rather than on the record, so that
// components deriving records (summaries) put it in the same place.
func IsResourceAttribute(name string) bool { return name == AttrClusterName }

// Metrics of the policy_metrics connector, documented with the attributes.
const (
	// MetricResults is the gauge of current results by outcome.
	MetricResults = "policy.results"
	// MetricDecisions is the cumulative sum of decisions.
	MetricDecisions = "policy.decisions"
	// AttrMetricOverflow marks the series that counts what exceeded a series limit, as the OpenTelemetry SDKs
	// do.
	AttrMetricOverflow = "otel.metric.overflow"
)
