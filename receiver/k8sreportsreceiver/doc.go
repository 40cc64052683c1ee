// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package k8sreportsreceiver watches policy and compliance report custom resources (PolicyReport, openreports
// Report, Kyverno EphemeralReport, every trivy-operator findings report, Compliance Operator
// ComplianceCheckResult and ComplianceRemediation, Gatekeeper constraint violations) and emits one log record
// per result that is new, changed or resolved, and one policy.scan record per completed ComplianceScan or
// ComplianceSuite run. With a storage extension it remembers what it emitted, so a restart emits exactly what
// changed while it was down.
package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"
