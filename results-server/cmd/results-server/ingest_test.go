// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
)

// defaultIngest are the ingest limits the README documents.
var defaultIngest = ingestOptions{limits: server.IngestLimits{MaxMetadataKeys: 64, MaxMetadataBytes: 16 << 10,
	MaxBodyBytes: 1 << 20, MaxBodyDepth: 64, MaxMessageBytes: 16 << 10, MaxFieldBytes: 1 << 10, MaxClockSkew: 5 * time.Minute, MaxClustersPerToken: 100,
	MaxKeysPerToken: 1_000_000}}

func TestIngestFlags(t *testing.T) {
	o, err := parseServeFlags([]string{"--listen", ":1", "--max-metadata-keys", "8", "--max-metadata-bytes", "1024",
		"--max-body-bytes", "4096", "--max-body-depth", "10", "--max-message-bytes", "2048", "--max-field-bytes", "256",
		"--max-clock-skew", "1m", "--max-clusters-per-token", "3",
		"--max-keys-per-token", "500"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, server.IngestLimits{MaxMetadataKeys: 8, MaxMetadataBytes: 1024, MaxBodyBytes: 4096,
		MaxBodyDepth: 10, MaxMessageBytes: 2048, MaxFieldBytes: 256, MaxClockSkew: time.Minute, MaxClustersPerToken: 3, MaxKeysPerToken: 500}, o.ingest.limits)

	_, err = parseServeFlags([]string{"--listen", ":1", "--max-body-depth", "0", "--max-clock-skew", "-1s"}, io.Discard)
	assert.EqualError(t, err, "serve: --max-body-depth must be positive\n--max-clock-skew must be positive")
}
