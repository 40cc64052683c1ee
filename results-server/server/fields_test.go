// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// TestFieldLimits: a message over max message bytes, or another text field over max field bytes (an identity
// field, which the key hashes, or a package path), rejects its result with the field's name; fields at the
// limits are stored. Every list page shows these fields, so they bound its size.
func TestFieldLimits(t *testing.T) {
	s := openConfig(t, Config{DB: "sqlite://" + t.TempDir() + "/r.db", Ingest: IngestLimits{MaxMessageBytes: 100, MaxFieldBytes: 50}})
	longMessage := with(podA, func(s *spec) { s.message = strings.Repeat("m", 101) }).pb()
	longKind := with(podA, func(s *spec) { s.kind = strings.Repeat("k", 51) }).pb()
	longPath := mutate(podB.pb(), func(r *pb.Result) {
		r.Vulnerability = &pb.Vulnerability{Id: "CVE-1", PackagePath: strings.Repeat("p", 51)}
	})
	atLimits := with(podA, func(s *spec) { s.message, s.policy = strings.Repeat("m", 100), strings.Repeat("p", 50) }).pb()
	resp := forward(t, s, batch(longMessage, longKind, longPath, atLimits))
	assert.Equal(t, uint32(1), resp.GetAccepted())
	assert.Equal(t, []*pb.Rejection{
		{Index: 0, Id: longMessage.GetId(), Reason: "message is 101 bytes, more than this server's limit of 100"},
		{Index: 1, Id: longKind.GetId(), Reason: "resource.kind is 51 bytes, more than this server's limit of 50"},
		{Index: 2, Id: longPath.GetId(), Reason: "vulnerability.package_path is 51 bytes, more than this server's limit of 50"},
	}, resp.GetRejected())
	assert.Contains(t, metricsText(t, s), `results_server_results_rejected_total{reason="field_too_large"} 3`)
}
