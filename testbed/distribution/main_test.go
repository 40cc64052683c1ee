// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package distribution_test holds the end-to-end tests of the otelcol-policy distribution: the binary `make build`
// made (OTELCOL_POLICY_BIN), run on the configurations, manifests, Helm chart and examples of
// distributions/otelcol-policy against real servers.
package distribution_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain runs the tests in distributions/otelcol-policy, whose files (config.yaml, helm/, kubernetes/,
// examples/, testdata/) they read by paths relative to it.
func TestMain(m *testing.M) {
	if err := os.Chdir(filepath.Join("..", "..", "distributions", "otelcol-policy")); err != nil {
		fmt.Fprintln(os.Stderr, "the distribution's files:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
