// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package k8seventsextension records Kubernetes Events on the collector's own Pod when a component's status
// turns to an error and when it recovers, so that `kubectl describe pod` and `kubectl get events` show why a
// collector is degraded. It watches component status (extensioncapabilities.ComponentStatusWatcher) and writes
// through client-go's event recorder, which rate-limits and aggregates as the kubelet's does.
package k8seventsextension // import "github.com/otelcol-policy/otelcol-policy/extension/k8seventsextension"
