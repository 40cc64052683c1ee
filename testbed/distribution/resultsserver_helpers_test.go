// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package distribution_test

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/collectortest"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// resultsToken is the one bearer token of the results servers the tests start.
const resultsToken = "s3cret-token-0123456789abcdef-0123"

// resultsServerBinary is bin/results-server, built by `make build` next to the collector.
func resultsServerBinary(t *testing.T) string {
	bin := filepath.Join(filepath.Dir(collectortest.Binary(t)), "results-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (run make build)", bin, err)
	}
	return bin
}

// resultsServer is a running bin/results-server.
type resultsServer struct {
	// GRPC and HTTP are its listeners' ports on 127.0.0.1.
	GRPC, HTTP int
}

// startResultsServer runs bin/results-server on the database db (a sqlite:// or postgres:// DSN), accepting
// resultsToken, with its gRPC and HTTP listeners on free ports, until t ends; it returns once the server
// answers. Its output goes to results-server.log in dir, shown when t fails.
func startResultsServer(t *testing.T, dir, db string) resultsServer {
	t.Helper()
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("# the collectors\n"+resultsToken+"\n"), 0o600))
	s := resultsServer{GRPC: collectortest.FreePort(t), HTTP: collectortest.FreePort(t)}
	proc, err := testproc.Start("results-server", testproc.Options{LogFile: filepath.Join(dir, "results-server.log")},
		resultsServerBinary(t), "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", s.GRPC),
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", s.HTTP), "--db", db, "--token-file", tokens)
	require.NoError(t, err)
	t.Cleanup(func() {
		proc.Stop(syscall.SIGINT, 15*time.Second)
		if t.Failed() {
			t.Logf("results-server output:\n%s", proc.LogTail(1<<14))
		}
	})
	require.NoError(t, proc.WaitReady(30*time.Second, func() error {
		return testproc.GetOK(http.DefaultClient, s.URL()+"/v1/fleet", resultsToken)
	}))
	return s
}

// URL is the server's HTTP base URL.
func (s resultsServer) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.HTTP) }

// collectorOverlay is a collector config overlay that forwards the logs pipeline to s with the results_grpc
// exporter, on a persistent queue, with resultsToken and the given extra_metadata.
func (s resultsServer) collectorOverlay(extraMetadata map[string]string) string {
	var meta strings.Builder
	for _, k := range slices.Sorted(maps.Keys(extraMetadata)) {
		fmt.Fprintf(&meta, "      %s: %q\n", k, extraMetadata[k])
	}
	return fmt.Sprintf(`
exporters:
  results_grpc:
    endpoint: 127.0.0.1:%d
    tls:
      insecure: true
    headers:
      authorization: Bearer %s
    extra_metadata:
%s    sending_queue:
      storage: file_storage
service:
  pipelines:
    logs:
      exporters: [durable_file, results_grpc, policy_metrics]
`, s.GRPC, resultsToken, meta.String())
}
