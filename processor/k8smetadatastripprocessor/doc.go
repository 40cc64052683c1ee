// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package k8smetadatastripprocessor removes server-generated metadata (managedFields, uid, resourceVersion...)
// from the Kubernetes objects found in log record bodies. That metadata bloats decision and result records and
// differs between clusters; without it, the same object content gives a byte-identical body whatever cluster it
// came from, so records can be compared and deduplicated across clusters.
package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"
