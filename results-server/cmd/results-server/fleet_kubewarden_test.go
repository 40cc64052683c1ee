// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
	"github.com/otelcol-policy/otelcol-policy/pkg/resultsapi"
	pb "github.com/otelcol-policy/otelcol-policy/proto/policyresults/v1"
)

// kubewardenResults are the results the k8s_reports receiver parses from Kubewarden's audit-scanner reports,
// read from the golden files its parser test keeps equal to the parser's output.
func kubewardenResults(t *testing.T, cluster string) []*pb.Result {
	t.Helper()
	var out []*pb.Result
	for _, file := range []string{"policyreport.golden.json", "clusterpolicyreport.golden.json"} {
		b, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "receiver", "k8sreportsreceiver", "testdata", "parsers", "kubewarden", file))
		require.NoError(t, err)
		var golden struct{ Results []policyresult.Result }
		require.NoError(t, json.Unmarshal(b, &golden))
		require.NotEmpty(t, golden.Results, file)
		for i := range golden.Results {
			r := &golden.Results[i]
			r.Cluster, r.State = cluster, policyresult.StateNew // set by the receiver's watcher and diff
			out = append(out, resultsapi.FromResult(r))
		}
	}
	return out
}

// TestFleetKubewarden: Kubewarden's results name no resources, only their report's scope; the fleet view
// shows that scope as the subject, a namespaced one in its namespace and a cluster-scoped one without.
func TestFleetKubewarden(t *testing.T) {
	dsn := forwardDB(t, kubewardenResults(t, "east")...)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"fleet", "--db", dsn}, &out, io.Discard))
	assert.Equal(t, `CLUSTER  PASS  FAIL  WARN  ERROR  SKIP  TOTAL
east     1     1     0     1      0     3

CLUSTER  SOURCE      POLICY                               PASS  FAIL  WARN  ERROR  SKIP  TOTAL
east     kubewarden  clusterwide-disallow-privileged      0     1     0     0      0     1
east     kubewarden  clusterwide-namespace-cost-center    0     0     0     1      0     1
east     kubewarden  namespaced-shop-require-owner-label  1     0     0     0      0     1

FAILING (2)
CLUSTER  NAMESPACE  RESOURCE         SOURCE      POLICY                             RULE  SEVERITY  OUTCOME  MESSAGE
east     -          Namespace/shop   kubewarden  clusterwide-namespace-cost-center  -     info      error    cannot reach policy server "default": connection refused
east     shop       Deployment/cart  kubewarden  clusterwide-disallow-privileged    -     high      fail     container "cart" runs privileged
`, out.String())
}
