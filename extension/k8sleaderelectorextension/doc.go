// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package k8sleaderelectorextension elects one leader among the replicas of a collector through a Kubernetes
// Lease, and tells the components that registered callbacks when this replica starts and stops leading, as
// contrib's extension of the same name does. The k8s_reports receiver uses it to watch reports from one
// replica only.
package k8sleaderelectorextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8sleaderelectorextension"
