// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate mdatagen metadata.yaml

// Package decisionlogsreceiver receives the decision streams of policy engines as policy.decision log records:
// OPA's decision_logs uploads over HTTP (gzip JSON arrays), and newline-delimited JSON over Unix sockets or TCP
// (Gatekeeper export messages, OPA events, or any JSON with a configured field mapping). It answers or reads
// on only after the pipeline accepted what it received, so a refusing pipeline slows the producers down
// instead of filling memory.
package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"
